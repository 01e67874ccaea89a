package retention

// PurgeBatch is purgeBatch for the tests.
const PurgeBatch = purgeBatch
