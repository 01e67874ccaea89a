package main

import (
	"context"
	"flag"
	"time"

	"github.com/heraldhq/herald/client"
)

var tenantCommands = map[string]*command{
	"list": {help: "list tenants (a tenant key sees its own)", run: listTenants},
	"create": {
		usage: "<id>", args: 1, help: "create a tenant (operator key)",
		flags: func(fs *flag.FlagSet) { fs.String("name", "", "the name the portal shows (default: the id)") },
		run:   createTenant,
	},
	"show": {usage: "<id>", args: 1, help: "show one tenant", run: showTenant},
}

var portalLinkCommand = &command{
	tenant: true, help: "mint a single-use link that opens the customer portal for the tenant",
	flags: func(fs *flag.FlagSet) {
		fs.Duration("ttl", 0, "how long the link works (default 15m, at most 24h)")
	},
	run: func(ctx context.Context, e *env) error {
		link, err := e.api.CreatePortalLink(ctx, e.tenant, e.duration("ttl"))
		if err != nil || e.json {
			return e.jsonOr(link, err)
		}
		return e.fields("url", link.URL, "tenant", link.TenantID, "expires", stamp(link.ExpiresAt))
	},
}

func listTenants(ctx context.Context, e *env) error {
	all, err := client.All(ctx, e.api.ListTenants)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(all)
	}
	rows := make([][]string, 0, len(all))
	for _, t := range all {
		rows = append(rows, []string{t.ID, t.Name, stamp(t.CreatedAt)})
	}
	return e.table([]string{"ID", "NAME", "CREATED"}, rows)
}

func createTenant(ctx context.Context, e *env) error {
	name := e.str("name")
	if name == "" {
		name = e.args[0]
	}
	t, err := e.api.CreateTenant(ctx, e.args[0], name)
	return e.showTenant(t, err)
}

func showTenant(ctx context.Context, e *env) error {
	t, err := e.api.GetTenant(ctx, e.args[0])
	return e.showTenant(t, err)
}

func (e *env) showTenant(t client.Tenant, err error) error {
	if err != nil || e.json {
		return e.jsonOr(t, err)
	}
	return e.fields("id", t.ID, "name", t.Name, "created", stamp(t.CreatedAt))
}

// stamp prints a time for a table: UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// stampPtr is stamp for an optional time.
func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}
