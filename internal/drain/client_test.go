package drain_test

import (
	"context"
	"errors"
	"testing"

	"scan/internal/drain"
)

// A wrong queue URL, endpoint or a missing region is a *ConfigError
// naming the setting, before any request.
func TestNewClientNamesTheWrongSetting(t *testing.T) {
	// The SDK reads the process's environment and shared files too.
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	for _, tc := range []struct {
		queue string
		env   map[string]string
		field string
	}{
		{"not a url", nil, "--sqs"},
		{"https://sqs.eu-west-1.amazonaws.com/", nil, "--sqs"},
		{"https://sqs.eu-west-1.amazonaws.com/1/q", map[string]string{"AWS_ENDPOINT_URL_SQS": "ftp://x"}, "AWS_ENDPOINT_URL_SQS"},
		{"https://sqs.eu-west-1.amazonaws.com/1/q", map[string]string{"AWS_ENDPOINT_URL": "::"}, "AWS_ENDPOINT_URL"},
		{"http://localhost:4100/1/q", nil, "AWS_REGION"},
	} {
		getenv := func(k string) string { return tc.env[k] }
		_, err := drain.NewClient(context.Background(), getenv, tc.queue)
		var ce *drain.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s %v: got %v, want a ConfigError naming %s", tc.queue, tc.env, err, tc.field)
		}
	}
	c, err := drain.NewClient(context.Background(), func(k string) string { return map[string]string{"AWS_REGION": "eu-west-1"}[k] }, "https://sqs.eu-west-1.amazonaws.com/1/q")
	if err != nil || c == nil {
		t.Fatalf("a queue URL and a region: %v", err)
	}
}
