package notice

import (
	"fmt"
	"strings"

	"scan/internal/usage"
)

// The variables that hold the key's secrets: the one keys are made with,
// and the earlier ones of a rotation (docs/fleet.md, Secret rotation).
const (
	SecretVar          = "NOTICE_KEY_SECRET"
	PreviousSecretsVar = "NOTICE_KEY_SECRET_PREVIOUS"
)

// SecretError is a secret ParseSecret or ParsePreviousSecrets refuses:
// Field names the variable, Msg what is wrong (and which of a list);
// neither ever holds a secret.
type SecretError = usage.Error

// ParseSecret checks NOTICE_KEY_SECRET's value s: set, and at least
// MinSecretLen bytes.
func ParseSecret(s string) ([]byte, error) {
	if s == "" {
		return nil, &SecretError{Field: SecretVar, Msg: fmt.Sprintf("required: set it to a random value of at least %d bytes (e.g. openssl rand -hex 32)", MinSecretLen)}
	}
	if len(s) < MinSecretLen {
		return nil, &SecretError{Field: SecretVar, Msg: fmt.Sprintf("too short (%d bytes): it must be at least %d bytes", len(s), MinSecretLen)}
	}
	return []byte(s), nil
}

// ParsePreviousSecrets reads NOTICE_KEY_SECRET_PREVIOUS's value v: the
// earlier secrets of a rotation, comma-separated, each at least
// MinSecretLen bytes and none the current one (none when v is blank).
// The suppression list matches an address under each of them too.
func ParsePreviousSecrets(v string, current []byte) ([][]byte, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out [][]byte
	for i, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil, &SecretError{Field: PreviousSecretsVar, Msg: fmt.Sprintf("secret %d is empty: give the earlier secrets separated by commas", i+1)}
		case len(s) < MinSecretLen:
			return nil, &SecretError{Field: PreviousSecretsVar, Msg: fmt.Sprintf("secret %d is too short (%d bytes): each must be at least %d bytes", i+1, len(s), MinSecretLen)}
		case s == string(current):
			return nil, &SecretError{Field: PreviousSecretsVar, Msg: fmt.Sprintf("secret %d is %s itself: list only earlier secrets", i+1, SecretVar)}
		}
		out = append(out, []byte(s))
	}
	return out, nil
}
