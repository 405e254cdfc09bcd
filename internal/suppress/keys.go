package suppress

import "scan/internal/notice"

// ParseKeys returns the list's hashers from the values of
// NOTICE_KEY_SECRET (secret) and NOTICE_KEY_SECRET_PREVIOUS (previous):
// notice.ParseSecret, notice.ParsePreviousSecrets, then NewKeys.
func ParseKeys(secret, previous string) (Keys, error) {
	sec, err := notice.ParseSecret(secret)
	if err != nil {
		return Keys{}, err
	}
	prevs, err := notice.ParsePreviousSecrets(previous, sec)
	if err != nil {
		return Keys{}, err
	}
	return NewKeys(sec, prevs)
}

// ParseLabels returns Keys.Labels of ParseKeys; without a secret, when
// need is false (the listing asks for no key), a label of "" for every
// key and no previous key ids.
func ParseLabels(secret, previous string, need bool) (func(string) string, []string, error) {
	if secret == "" && !need {
		return func(string) string { return "" }, nil, nil
	}
	k, err := ParseKeys(secret, previous)
	if err != nil {
		return nil, nil, err
	}
	label, ids := k.Labels()
	return label, ids, nil
}
