package migrations

// ApplyThrough is Apply up to and including migration last, for tests
// that fill a database of an older schema before upgrading it.
var ApplyThrough = apply
