package drain

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"scan/internal/usage"
)

// ConfigError is a setting of the drain that is missing or wrong; Field
// names it (the queue URL's flag, or an environment variable).
type ConfigError = usage.Error

// NewClient builds the SQS client of the queue at queueURL (the --sqs
// flag) from the SDK's standard chain (environment, shared files, IRSA
// web identity, instance role), with the endpoint of AWS_ENDPOINT_URL_SQS
// (else AWS_ENDPOINT_URL) and the region of AWS_REGION, the shared
// config, or else the queue URL's host (sqs.REGION.amazonaws.com). A
// wrong setting is a *ConfigError naming it.
func NewClient(ctx context.Context, getenv func(string) string, queueURL string) (*sqs.Client, error) {
	queue, err := url.Parse(queueURL)
	if err != nil || (queue.Scheme != "https" && queue.Scheme != "http") || queue.Hostname() == "" || strings.Trim(queue.Path, "/") == "" {
		return nil, &ConfigError{Field: "--sqs", Msg: fmt.Sprintf("%q is not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE)", queueURL)}
	}
	var opts []func(*config.LoadOptions) error
	if r := getenv("AWS_REGION"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	field, endpoint := "AWS_ENDPOINT_URL_SQS", getenv("AWS_ENDPOINT_URL_SQS")
	if endpoint == "" {
		field, endpoint = "AWS_ENDPOINT_URL", getenv("AWS_ENDPOINT_URL")
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return nil, &ConfigError{Field: field, Msg: fmt.Sprintf("%q is not an http(s) URL", endpoint)}
		}
		opts = append(opts, config.WithBaseEndpoint(endpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, &ConfigError{Field: "AWS_CONFIG_FILE", Msg: fmt.Sprintf("AWS configuration: %v", err)}
	}
	if cfg.Region == "" {
		if parts := strings.Split(queue.Hostname(), "."); len(parts) >= 3 && parts[0] == "sqs" {
			cfg.Region = parts[1]
		}
	}
	if cfg.Region == "" {
		return nil, &ConfigError{Field: "AWS_REGION", Msg: "required with --sqs (or a region in the shared AWS config, or a queue URL of sqs.REGION.amazonaws.com)"}
	}
	return sqs.NewFromConfig(cfg), nil
}
