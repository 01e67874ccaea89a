// Package replicas holds the proof that Herald's programs, run as several
// replicas with their default settings, fit in one Postgres server's
// default connection limit (max_connections = 100): four dispatchers and an
// api on a private server (harness/chaos's PrivateServer) publish and
// deliver, and pg_stat_activity counts each program's connections by its
// application_name. See docs/scaling.md.
package replicas
