package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/heraldhq/herald/client"
)

var checkCommand = &command{
	tenant: true, usage: "<endpoint-id>", args: 1,
	help: "test the endpoint's receiver: send the pre-launch checks and report each answer with what to verify",
	flags: func(fs *flag.FlagSet) {
		fs.Duration("interval", 500*time.Millisecond, "how often to ask for the answers")
	},
	run: receiverCheck,
}

func receiverCheck(ctx context.Context, e *env) error {
	endpointID, err := e.endpointArg(0)
	if err != nil {
		return err
	}
	interval := e.duration("interval")
	if interval <= 0 {
		return usagef("--interval must be positive, e.g. 500ms")
	}
	c, err := e.api.StartReceiverCheck(ctx, e.tenant, endpointID)
	if err != nil {
		return err
	}
	if !e.json {
		fmt.Fprintf(e.stderr, "receiver check %s started; sending its steps\n", c.ID)
	}
	reported := 0
	for {
		if !e.json {
			reported = e.reportSteps(c, reported)
		}
		if c.Status == client.CheckCompleted {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(e.stderr, "stopped following; check %s goes on in the background\n", c.ID)
			return nil
		case <-time.After(interval):
		}
		if c, err = e.api.GetReceiverCheck(ctx, e.tenant, endpointID, c.ID); err != nil {
			return err
		}
	}
	if e.json {
		if err := e.printJSON(c); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.stdout, "Also check yourself (Herald cannot send these):")
		for _, o := range c.OwnerChecks {
			fmt.Fprintf(e.stdout, "  - %s\n", o)
		}
	}
	for _, s := range c.Steps {
		if s.Status == client.StepFailed {
			return errCheckFailed
		}
	}
	return nil
}

// reportSteps prints the steps from done on that have their answers, and
// returns how many are printed.
func (e *env) reportSteps(c client.ReceiverCheck, done int) int {
	for ; done < len(c.Steps) && c.Steps[done].Status != client.StepPending; done++ {
		s := c.Steps[done]
		fmt.Fprintf(e.stdout, "%d. %s: %s\n", done+1, s.Title, s.Status)
		if len(s.Sends) > 0 {
			rows := make([][]string, 0, len(s.Sends))
			for _, send := range s.Sends {
				answer := send.Error
				if send.StatusCode != 0 {
					answer = fmt.Sprintf("HTTP %d", send.StatusCode)
				}
				rows = append(rows, []string{"   ", send.WebhookID, fmt.Sprintf("v%d", send.Version), answer, fmt.Sprintf("%d ms", send.DurationMS)})
			}
			_ = e.table([]string{"   ", "WEBHOOK-ID", "VERSION", "ANSWER", "TIME"}, rows)
		}
		if s.Note != "" {
			fmt.Fprintf(e.stdout, "   %s\n", s.Note)
		}
		fmt.Fprintf(e.stdout, "   Verify on your side: %s\n\n", s.Verify)
	}
	return done
}
