package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/client"
)

var endpointCommands = map[string]*command{
	"list": {tenant: true, help: "list the tenant's endpoints", run: listEndpoints},
	"create": {
		tenant: true, help: "create an endpoint; it gets a signing secret at once (herald endpoints reveal)",
		flags: func(fs *flag.FlagSet) {
			fs.String("url", "", "where to POST webhooks (required)")
			fs.String("description", "", "a note for people")
			fs.String("event-types", "", "comma-separated types to subscribe to (default: every type)")
			fs.Float64("rate-limit", 0, "messages per second at most (default 0: unlimited)")
		},
		run: createEndpoint,
	},
	"show":   {tenant: true, usage: "<endpoint-id>", args: 1, help: "show one endpoint", run: showEndpoint},
	"enable": {tenant: true, usage: "<endpoint-id>", args: 1, help: "enable an endpoint; clears its disabled reason and failing spell", run: enableEndpoint},
	"disable": {
		tenant: true, usage: "<endpoint-id>", args: 1, help: "disable an endpoint: pending deliveries are cancelled, later messages skipped",
		flags: func(fs *flag.FlagSet) { fs.String("reason", "", "why, shown to the endpoint's owner") },
		run:   disableEndpoint,
	},
	"reveal": {tenant: true, usage: "<endpoint-id>", args: 1, help: "print what receivers verify with (whsec_… or whpk_…)", run: revealSecret},
	"rotate": {
		tenant: true, usage: "<endpoint-id>", args: 1, help: "rotate the signing secret and print the new one",
		flags: func(fs *flag.FlagSet) {
			fs.Duration("grace", 0, "how long the old secret keeps signing (default 24h, at most 168h)")
		},
		run: rotateSecret,
	},
	"check": checkCommand,
	"test":  {tenant: true, usage: "<endpoint-id>", args: 1, help: "send a herald.test event to this endpoint only", run: sendTestEvent},
}

// endpointArg reads the endpoint id argument at i.
func (e *env) endpointArg(i int) (uuid.UUID, error) {
	id, err := uuid.Parse(e.args[i])
	if err != nil {
		return uuid.Nil, usagef("%q is not an endpoint id; herald endpoints list --tenant %s shows them", e.args[i], e.tenant)
	}
	return id, nil
}

func listEndpoints(ctx context.Context, e *env) error {
	all, err := client.All(ctx, func(ctx context.Context, o client.ListOptions) (client.Page[client.Endpoint], error) {
		return e.api.ListEndpoints(ctx, e.tenant, o)
	})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(all)
	}
	rows := make([][]string, 0, len(all))
	for _, ep := range all {
		rows = append(rows, []string{ep.ID.String(), state(ep), ep.URL, eventTypes(ep.EventTypes), ep.Description})
	}
	return e.table([]string{"ID", "STATE", "URL", "EVENT TYPES", "DESCRIPTION"}, rows)
}

func createEndpoint(ctx context.Context, e *env) error {
	url := e.str("url")
	if url == "" {
		return usagef("--url is required: where Herald POSTs the webhooks")
	}
	var types []string
	for _, t := range strings.Split(e.str("event-types"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			types = append(types, t)
		}
	}
	ep, err := e.api.CreateEndpoint(ctx, e.tenant, client.NewEndpoint{
		URL: url, Description: e.str("description"), EventTypes: types, RateLimit: e.value("rate-limit").(float64),
	})
	return e.showEndpoint(ep, err)
}

func showEndpoint(ctx context.Context, e *env) error {
	return e.onEndpoint(ctx, e.api.GetEndpoint)
}

func enableEndpoint(ctx context.Context, e *env) error {
	return e.onEndpoint(ctx, e.api.EnableEndpoint)
}

func disableEndpoint(ctx context.Context, e *env) error {
	return e.onEndpoint(ctx, func(ctx context.Context, tenant string, id uuid.UUID) (client.Endpoint, error) {
		return e.api.DisableEndpoint(ctx, tenant, id, e.str("reason"))
	})
}

func (e *env) onEndpoint(ctx context.Context, call func(context.Context, string, uuid.UUID) (client.Endpoint, error)) error {
	id, err := e.endpointArg(0)
	if err != nil {
		return err
	}
	ep, err := call(ctx, e.tenant, id)
	return e.showEndpoint(ep, err)
}

func (e *env) showEndpoint(ep client.Endpoint, err error) error {
	if err != nil || e.json {
		return e.jsonOr(ep, err)
	}
	pairs := []string{"id", ep.ID.String(), "tenant", ep.TenantID, "url", ep.URL, "state", state(ep),
		"event types", eventTypes(ep.EventTypes), "description", ep.Description, "rate limit", rateLimit(ep.RateLimit)}
	if !ep.Enabled {
		pairs = append(pairs, "disabled", stampPtr(ep.DisabledAt)+" "+ep.DisabledReason)
	}
	if ep.FailingSince != nil {
		pairs = append(pairs, "failing since", stampPtr(ep.FailingSince))
	}
	if ep.Breaker.OpenedAt != nil {
		pairs = append(pairs, "breaker", "open since "+stampPtr(ep.Breaker.OpenedAt)+": one probe at a time until it answers")
	}
	pairs = append(pairs, "last success", stampPtr(ep.LastSuccessAt), "created", stamp(ep.CreatedAt))
	return e.fields(pairs...)
}

func revealSecret(ctx context.Context, e *env) error {
	return e.onSecret(ctx, e.api.RevealSecret)
}

func rotateSecret(ctx context.Context, e *env) error {
	return e.onSecret(ctx, func(ctx context.Context, tenant string, id uuid.UUID) (string, error) {
		return e.api.RotateSecret(ctx, tenant, id, e.duration("grace"))
	})
}

func (e *env) onSecret(ctx context.Context, call func(context.Context, string, uuid.UUID) (string, error)) error {
	id, err := e.endpointArg(0)
	if err != nil {
		return err
	}
	secret, err := call(ctx, e.tenant, id)
	if err != nil || e.json {
		return e.jsonOr(map[string]string{"secret": secret}, err)
	}
	_, err = fmt.Fprintln(e.stdout, secret)
	return err
}

func sendTestEvent(ctx context.Context, e *env) error {
	id, err := e.endpointArg(0)
	if err != nil {
		return err
	}
	m, err := e.api.SendTestEvent(ctx, e.tenant, id)
	if err != nil || e.json {
		return e.jsonOr(m, err)
	}
	_, err = fmt.Fprintf(e.stdout, "test event %s queued; herald messages show %s --tenant %s follows it\n", m.ID, m.ID, e.tenant)
	return err
}

func state(ep client.Endpoint) string {
	switch {
	case !ep.Enabled:
		return "disabled"
	case ep.FailingSince != nil:
		return "failing"
	}
	return "enabled"
}

func eventTypes(types []string) string {
	if len(types) == 0 {
		return "*"
	}
	return strings.Join(types, ",")
}

func rateLimit(perSecond float64) string {
	if perSecond == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(perSecond, 'g', -1, 64) + "/s"
}
