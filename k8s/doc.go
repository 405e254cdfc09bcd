// Package k8s holds the Kubernetes manifests of the nightly job
// (cronjob.yaml, cronjob-indexed.yaml, configmap.yaml), the hourly reconcile
// job (cronjob-reconcile.yaml) and, in k8s_test.go,
// the test that decodes every document strictly into the Kubernetes API types
// and checks the settings operators rely on. It has no Go code of its own.
package k8s
