package notice

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSecret(t *testing.T) {
	long := strings.Repeat("k", MinSecretLen)
	if got, err := ParseSecret(long); err != nil || string(got) != long {
		t.Errorf("ParseSecret of %d bytes = %q, %v; want it back", MinSecretLen, got, err)
	}
	for _, s := range []string{"", long[1:]} {
		_, err := ParseSecret(s)
		var se *SecretError
		if !errors.As(err, &se) || se.Field != SecretVar || (s != "" && strings.Contains(err.Error(), s)) {
			t.Errorf("ParseSecret of %d bytes: %v; want a *SecretError naming %s, without the secret", len(s), err, SecretVar)
		}
	}
}

func TestParsePreviousSecrets(t *testing.T) {
	cur := []byte(strings.Repeat("c", MinSecretLen))
	a, b := strings.Repeat("a", MinSecretLen), strings.Repeat("b", MinSecretLen+3)
	for _, v := range []string{"", "  "} {
		if got, err := ParsePreviousSecrets(v, cur); got != nil || err != nil {
			t.Errorf("ParsePreviousSecrets(%q) = %q, %v; want none", v, got, err)
		}
	}
	got, err := ParsePreviousSecrets(" "+a+" ,"+b, cur)
	if err != nil || len(got) != 2 || string(got[0]) != a || string(got[1]) != b {
		t.Errorf("ParsePreviousSecrets of two = %q, %v; want both, trimmed, in order", got, err)
	}
	for _, tc := range []struct{ v, want string }{
		{a + ",", "secret 2 is empty"},
		{a + "," + a[1:], "secret 2 is too short"},
		{string(cur), "secret 1 is NOTICE_KEY_SECRET itself"},
	} {
		_, err := ParsePreviousSecrets(tc.v, cur)
		var se *SecretError
		if !errors.As(err, &se) || se.Field != PreviousSecretsVar || !strings.Contains(se.Msg, tc.want) || strings.Contains(err.Error(), a[1:]) {
			t.Errorf("ParsePreviousSecrets(%q): %v; want a *SecretError naming %s saying %q, without a secret", tc.v, err, PreviousSecretsVar, tc.want)
		}
	}
}
