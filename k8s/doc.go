// Package k8s holds the Kubernetes manifests of the nightly job
// (cronjob.yaml, cronjob-indexed.yaml, configmap.yaml), the hourly reconcile
// job (cronjob-reconcile.yaml), the 5-minute SQS drain
// (cronjob-reconcile-sqs.yaml), the daily list of notices that reached
// no one (cronjob-undelivered.yaml), its alerts
// (prometheusrule.yaml) and its Grafana dashboard (grafana-dashboard.json).
// k8s_test.go decodes every document strictly into the Kubernetes API types
// and checks the settings operators rely on; alerts_test.go runs the alerts'
// promtool unit tests (testdata/alerts_test.yaml). It has no Go code of its
// own.
package k8s
