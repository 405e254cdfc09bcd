package reconcile

// Split is split, for the tests of each provider's fixtures.
var Split = split
