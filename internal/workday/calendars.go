// The calendar codes and the library's holiday lists they name (the
// holidays themselves are github.com/rickar/cal/v2's, never written here).
// Great Britain has no calendar of its own: England and Wales share one
// (GB-ENG, GB-WLS); Australia has its states' only.

package workday

import (
	"github.com/rickar/cal/v2"
	"github.com/rickar/cal/v2/ar"
	"github.com/rickar/cal/v2/at"
	"github.com/rickar/cal/v2/au"
	"github.com/rickar/cal/v2/be"
	"github.com/rickar/cal/v2/bg"
	"github.com/rickar/cal/v2/br"
	"github.com/rickar/cal/v2/ca"
	"github.com/rickar/cal/v2/ch"
	"github.com/rickar/cal/v2/cy"
	"github.com/rickar/cal/v2/cz"
	"github.com/rickar/cal/v2/de"
	"github.com/rickar/cal/v2/dk"
	"github.com/rickar/cal/v2/ee"
	"github.com/rickar/cal/v2/es"
	"github.com/rickar/cal/v2/fi"
	"github.com/rickar/cal/v2/fr"
	"github.com/rickar/cal/v2/gb"
	"github.com/rickar/cal/v2/gr"
	"github.com/rickar/cal/v2/hr"
	"github.com/rickar/cal/v2/hu"
	"github.com/rickar/cal/v2/ie"
	"github.com/rickar/cal/v2/is"
	"github.com/rickar/cal/v2/it"
	"github.com/rickar/cal/v2/jp"
	"github.com/rickar/cal/v2/ke"
	"github.com/rickar/cal/v2/lt"
	"github.com/rickar/cal/v2/lu"
	"github.com/rickar/cal/v2/lv"
	"github.com/rickar/cal/v2/mt"
	"github.com/rickar/cal/v2/mw"
	"github.com/rickar/cal/v2/mx"
	"github.com/rickar/cal/v2/nc"
	"github.com/rickar/cal/v2/nl"
	"github.com/rickar/cal/v2/no"
	"github.com/rickar/cal/v2/nz"
	"github.com/rickar/cal/v2/pl"
	"github.com/rickar/cal/v2/pt"
	"github.com/rickar/cal/v2/ro"
	"github.com/rickar/cal/v2/rs"
	"github.com/rickar/cal/v2/ru"
	"github.com/rickar/cal/v2/se"
	"github.com/rickar/cal/v2/si"
	"github.com/rickar/cal/v2/sk"
	"github.com/rickar/cal/v2/th"
	"github.com/rickar/cal/v2/ua"
	"github.com/rickar/cal/v2/us"
	"github.com/rickar/cal/v2/za"
)

// calendars maps an ISO 3166-1 alpha-2 country code, or an ISO 3166-2
// subdivision code, to the public holidays the library defines for it.
var calendars = map[string][]*cal.Holiday{
	"AR":     ar.Holidays,
	"AT":     at.Holidays,
	"AU-ACT": au.HolidaysACT,
	"AU-NSW": au.HolidaysNSW,
	"AU-NT":  au.HolidaysNT,
	"AU-QLD": au.HolidaysQLD,
	"AU-SA":  au.HolidaysSA,
	"AU-TAS": au.HolidaysTAS,
	"AU-VIC": au.HolidaysVIC,
	"AU-WA":  au.HolidaysWA,
	"BE":     be.Holidays,
	"BG":     bg.Holidays,
	"BR":     br.Holidays,
	"CA":     ca.Holidays,
	"CH":     ch.Holidays,
	"CH-ZH":  ch.HolidaysZH,
	"CH-BE":  ch.HolidaysBE,
	"CH-LU":  ch.HolidaysLU,
	"CH-UR":  ch.HolidaysUR,
	"CH-SZ":  ch.HolidaysSZ,
	"CH-OW":  ch.HolidaysOW,
	"CH-NW":  ch.HolidaysNW,
	"CH-GL":  ch.HolidaysGL,
	"CH-ZG":  ch.HolidaysZG,
	"CH-FR":  ch.HolidaysFR,
	"CH-SO":  ch.HolidaysSO,
	"CH-BS":  ch.HolidaysBS,
	"CH-BL":  ch.HolidaysBL,
	"CH-SH":  ch.HolidaysSH,
	"CH-AR":  ch.HolidaysAR,
	"CH-AI":  ch.HolidaysAI,
	"CH-SG":  ch.HolidaysSG,
	"CH-GR":  ch.HolidaysGR,
	"CH-AG":  ch.HolidaysAG,
	"CH-TG":  ch.HolidaysTG,
	"CH-VD":  ch.HolidaysVD,
	"CH-TI":  ch.HolidaysTI,
	"CH-VS":  ch.HolidaysVS,
	"CH-NE":  ch.HolidaysNE,
	"CH-GE":  ch.HolidaysGE,
	"CH-JU":  ch.HolidaysJU,
	"CY":     cy.Holidays,
	"CZ":     cz.Holidays,
	"DE":     de.Holidays,
	"DE-BW":  de.HolidaysBW,
	"DE-BY":  de.HolidaysBY,
	"DE-BE":  de.HolidaysBE,
	"DE-BB":  de.HolidaysBB,
	"DE-HB":  de.HolidaysHB,
	"DE-HH":  de.HolidaysHH,
	"DE-HE":  de.HolidaysHE,
	"DE-MV":  de.HolidaysMV,
	"DE-NI":  de.HolidaysNI,
	"DE-NW":  de.HolidaysNW,
	"DE-RP":  de.HolidaysRP,
	"DE-SL":  de.HolidaysSL,
	"DE-SN":  de.HolidaysSN,
	"DE-ST":  de.HolidaysST,
	"DE-SH":  de.HolidaysSH,
	"DE-TH":  de.HolidaysTH,
	"DK":     dk.Holidays,
	"EE":     ee.Holidays,
	"ES":     es.Holidays,
	"FI":     fi.Holidays,
	"FR":     fr.Holidays,
	"GB-ENG": gb.Holidays,
	"GB-WLS": gb.Holidays,
	"GR":     gr.Holidays,
	"HR":     hr.Holidays,
	"HU":     hu.Holidays,
	"IE":     ie.Holidays,
	"IS":     is.Holidays,
	"IT":     it.Holidays,
	"JP":     jp.Holidays,
	"KE":     ke.Holidays,
	"LT":     lt.Holidays,
	"LU":     lu.Holidays,
	"LV":     lv.Holidays,
	"MT":     mt.Holidays,
	"MW":     mw.Holidays,
	"MX":     mx.Holidays,
	"NC":     nc.Holidays,
	"NL":     nl.Holidays,
	"NO":     no.Holidays,
	"NZ":     nz.Holidays,
	"PL":     pl.Holidays,
	"PT":     pt.Holidays,
	"RO":     ro.Holidays,
	"RS":     rs.Holidays,
	"RU":     ru.Holidays,
	"SE":     se.Holidays,
	"SI":     si.Holidays,
	"SK":     sk.Holidays,
	"TH":     th.Holidays,
	"UA":     ua.Holidays,
	"US":     us.Holidays,
	"ZA":     za.Holidays,
}
