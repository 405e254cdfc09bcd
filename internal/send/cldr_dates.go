// Code generated from the package list the command below prints; DO NOT EDIT.
//
//	(cd $(go list -m -f '{{.Dir}}' github.com/go-playground/locales) &&
//	 ls -d en en_* de de_* fr es it nl pt sv da nb fi pl | grep -v POSIX)
//
// The CLDR date formats of the shipped languages (English and German) in
// every region CLDR knows, and of the base languages an operator is most
// likely to add templates in. A locale not listed is formatted by its
// nearest listed CLDR parent (language.Tag.Parent), else the default
// locale: the data comes from github.com/go-playground/locales, never from
// a table written here.

package send

import (
	"github.com/go-playground/locales"
	"github.com/go-playground/locales/da"
	"github.com/go-playground/locales/de"
	"github.com/go-playground/locales/de_AT"
	"github.com/go-playground/locales/de_BE"
	"github.com/go-playground/locales/de_CH"
	"github.com/go-playground/locales/de_DE"
	"github.com/go-playground/locales/de_IT"
	"github.com/go-playground/locales/de_LI"
	"github.com/go-playground/locales/de_LU"
	"github.com/go-playground/locales/en"
	"github.com/go-playground/locales/en_001"
	"github.com/go-playground/locales/en_150"
	"github.com/go-playground/locales/en_AE"
	"github.com/go-playground/locales/en_AG"
	"github.com/go-playground/locales/en_AI"
	"github.com/go-playground/locales/en_AS"
	"github.com/go-playground/locales/en_AT"
	"github.com/go-playground/locales/en_AU"
	"github.com/go-playground/locales/en_BB"
	"github.com/go-playground/locales/en_BE"
	"github.com/go-playground/locales/en_BI"
	"github.com/go-playground/locales/en_BM"
	"github.com/go-playground/locales/en_BS"
	"github.com/go-playground/locales/en_BW"
	"github.com/go-playground/locales/en_BZ"
	"github.com/go-playground/locales/en_CA"
	"github.com/go-playground/locales/en_CC"
	"github.com/go-playground/locales/en_CH"
	"github.com/go-playground/locales/en_CK"
	"github.com/go-playground/locales/en_CM"
	"github.com/go-playground/locales/en_CX"
	"github.com/go-playground/locales/en_CY"
	"github.com/go-playground/locales/en_DE"
	"github.com/go-playground/locales/en_DG"
	"github.com/go-playground/locales/en_DK"
	"github.com/go-playground/locales/en_DM"
	"github.com/go-playground/locales/en_ER"
	"github.com/go-playground/locales/en_FI"
	"github.com/go-playground/locales/en_FJ"
	"github.com/go-playground/locales/en_FK"
	"github.com/go-playground/locales/en_FM"
	"github.com/go-playground/locales/en_GB"
	"github.com/go-playground/locales/en_GD"
	"github.com/go-playground/locales/en_GG"
	"github.com/go-playground/locales/en_GH"
	"github.com/go-playground/locales/en_GI"
	"github.com/go-playground/locales/en_GM"
	"github.com/go-playground/locales/en_GU"
	"github.com/go-playground/locales/en_GY"
	"github.com/go-playground/locales/en_HK"
	"github.com/go-playground/locales/en_IE"
	"github.com/go-playground/locales/en_IL"
	"github.com/go-playground/locales/en_IM"
	"github.com/go-playground/locales/en_IN"
	"github.com/go-playground/locales/en_IO"
	"github.com/go-playground/locales/en_JE"
	"github.com/go-playground/locales/en_JM"
	"github.com/go-playground/locales/en_KE"
	"github.com/go-playground/locales/en_KI"
	"github.com/go-playground/locales/en_KN"
	"github.com/go-playground/locales/en_KY"
	"github.com/go-playground/locales/en_LC"
	"github.com/go-playground/locales/en_LR"
	"github.com/go-playground/locales/en_LS"
	"github.com/go-playground/locales/en_MG"
	"github.com/go-playground/locales/en_MH"
	"github.com/go-playground/locales/en_MO"
	"github.com/go-playground/locales/en_MP"
	"github.com/go-playground/locales/en_MS"
	"github.com/go-playground/locales/en_MT"
	"github.com/go-playground/locales/en_MU"
	"github.com/go-playground/locales/en_MW"
	"github.com/go-playground/locales/en_MY"
	"github.com/go-playground/locales/en_NA"
	"github.com/go-playground/locales/en_NF"
	"github.com/go-playground/locales/en_NG"
	"github.com/go-playground/locales/en_NL"
	"github.com/go-playground/locales/en_NR"
	"github.com/go-playground/locales/en_NU"
	"github.com/go-playground/locales/en_NZ"
	"github.com/go-playground/locales/en_PG"
	"github.com/go-playground/locales/en_PH"
	"github.com/go-playground/locales/en_PK"
	"github.com/go-playground/locales/en_PN"
	"github.com/go-playground/locales/en_PR"
	"github.com/go-playground/locales/en_PW"
	"github.com/go-playground/locales/en_RW"
	"github.com/go-playground/locales/en_SB"
	"github.com/go-playground/locales/en_SC"
	"github.com/go-playground/locales/en_SD"
	"github.com/go-playground/locales/en_SE"
	"github.com/go-playground/locales/en_SG"
	"github.com/go-playground/locales/en_SH"
	"github.com/go-playground/locales/en_SI"
	"github.com/go-playground/locales/en_SL"
	"github.com/go-playground/locales/en_SS"
	"github.com/go-playground/locales/en_SX"
	"github.com/go-playground/locales/en_SZ"
	"github.com/go-playground/locales/en_TC"
	"github.com/go-playground/locales/en_TK"
	"github.com/go-playground/locales/en_TO"
	"github.com/go-playground/locales/en_TT"
	"github.com/go-playground/locales/en_TV"
	"github.com/go-playground/locales/en_TZ"
	"github.com/go-playground/locales/en_UG"
	"github.com/go-playground/locales/en_UM"
	"github.com/go-playground/locales/en_US"
	"github.com/go-playground/locales/en_VC"
	"github.com/go-playground/locales/en_VG"
	"github.com/go-playground/locales/en_VI"
	"github.com/go-playground/locales/en_VU"
	"github.com/go-playground/locales/en_WS"
	"github.com/go-playground/locales/en_ZA"
	"github.com/go-playground/locales/en_ZM"
	"github.com/go-playground/locales/en_ZW"
	"github.com/go-playground/locales/es"
	"github.com/go-playground/locales/fi"
	"github.com/go-playground/locales/fr"
	"github.com/go-playground/locales/it"
	"github.com/go-playground/locales/nb"
	"github.com/go-playground/locales/nl"
	"github.com/go-playground/locales/pl"
	"github.com/go-playground/locales/pt"
	"github.com/go-playground/locales/sv"
)

// cldrDates maps a BCP 47 tag ("en-GB") to the constructor of its CLDR
// translator.
var cldrDates = map[string]func() locales.Translator{
	"da":     da.New,
	"de":     de.New,
	"de-AT":  de_AT.New,
	"de-BE":  de_BE.New,
	"de-CH":  de_CH.New,
	"de-DE":  de_DE.New,
	"de-IT":  de_IT.New,
	"de-LI":  de_LI.New,
	"de-LU":  de_LU.New,
	"en":     en.New,
	"en-001": en_001.New,
	"en-150": en_150.New,
	"en-AE":  en_AE.New,
	"en-AG":  en_AG.New,
	"en-AI":  en_AI.New,
	"en-AS":  en_AS.New,
	"en-AT":  en_AT.New,
	"en-AU":  en_AU.New,
	"en-BB":  en_BB.New,
	"en-BE":  en_BE.New,
	"en-BI":  en_BI.New,
	"en-BM":  en_BM.New,
	"en-BS":  en_BS.New,
	"en-BW":  en_BW.New,
	"en-BZ":  en_BZ.New,
	"en-CA":  en_CA.New,
	"en-CC":  en_CC.New,
	"en-CH":  en_CH.New,
	"en-CK":  en_CK.New,
	"en-CM":  en_CM.New,
	"en-CX":  en_CX.New,
	"en-CY":  en_CY.New,
	"en-DE":  en_DE.New,
	"en-DG":  en_DG.New,
	"en-DK":  en_DK.New,
	"en-DM":  en_DM.New,
	"en-ER":  en_ER.New,
	"en-FI":  en_FI.New,
	"en-FJ":  en_FJ.New,
	"en-FK":  en_FK.New,
	"en-FM":  en_FM.New,
	"en-GB":  en_GB.New,
	"en-GD":  en_GD.New,
	"en-GG":  en_GG.New,
	"en-GH":  en_GH.New,
	"en-GI":  en_GI.New,
	"en-GM":  en_GM.New,
	"en-GU":  en_GU.New,
	"en-GY":  en_GY.New,
	"en-HK":  en_HK.New,
	"en-IE":  en_IE.New,
	"en-IL":  en_IL.New,
	"en-IM":  en_IM.New,
	"en-IN":  en_IN.New,
	"en-IO":  en_IO.New,
	"en-JE":  en_JE.New,
	"en-JM":  en_JM.New,
	"en-KE":  en_KE.New,
	"en-KI":  en_KI.New,
	"en-KN":  en_KN.New,
	"en-KY":  en_KY.New,
	"en-LC":  en_LC.New,
	"en-LR":  en_LR.New,
	"en-LS":  en_LS.New,
	"en-MG":  en_MG.New,
	"en-MH":  en_MH.New,
	"en-MO":  en_MO.New,
	"en-MP":  en_MP.New,
	"en-MS":  en_MS.New,
	"en-MT":  en_MT.New,
	"en-MU":  en_MU.New,
	"en-MW":  en_MW.New,
	"en-MY":  en_MY.New,
	"en-NA":  en_NA.New,
	"en-NF":  en_NF.New,
	"en-NG":  en_NG.New,
	"en-NL":  en_NL.New,
	"en-NR":  en_NR.New,
	"en-NU":  en_NU.New,
	"en-NZ":  en_NZ.New,
	"en-PG":  en_PG.New,
	"en-PH":  en_PH.New,
	"en-PK":  en_PK.New,
	"en-PN":  en_PN.New,
	"en-PR":  en_PR.New,
	"en-PW":  en_PW.New,
	"en-RW":  en_RW.New,
	"en-SB":  en_SB.New,
	"en-SC":  en_SC.New,
	"en-SD":  en_SD.New,
	"en-SE":  en_SE.New,
	"en-SG":  en_SG.New,
	"en-SH":  en_SH.New,
	"en-SI":  en_SI.New,
	"en-SL":  en_SL.New,
	"en-SS":  en_SS.New,
	"en-SX":  en_SX.New,
	"en-SZ":  en_SZ.New,
	"en-TC":  en_TC.New,
	"en-TK":  en_TK.New,
	"en-TO":  en_TO.New,
	"en-TT":  en_TT.New,
	"en-TV":  en_TV.New,
	"en-TZ":  en_TZ.New,
	"en-UG":  en_UG.New,
	"en-UM":  en_UM.New,
	"en-US":  en_US.New,
	"en-VC":  en_VC.New,
	"en-VG":  en_VG.New,
	"en-VI":  en_VI.New,
	"en-VU":  en_VU.New,
	"en-WS":  en_WS.New,
	"en-ZA":  en_ZA.New,
	"en-ZM":  en_ZM.New,
	"en-ZW":  en_ZW.New,
	"es":     es.New,
	"fi":     fi.New,
	"fr":     fr.New,
	"it":     it.New,
	"nb":     nb.New,
	"nl":     nl.New,
	"pl":     pl.New,
	"pt":     pt.New,
	"sv":     sv.New,
}
