// Package cronexpr reads the cron expressions of the config's schedules. It
// is apart from package schedule so that config can check an expression
// without depending on the engine the scheduler submits turns to.
package cronexpr

import (
	"fmt"
	"strings"
	_ "time/tzdata" // IANA zones even where the system has none (slim images)

	"github.com/robfig/cron/v3"
)

// parser reads standard five-field expressions (minute, hour, day of
// month, month, day of week), an optional leading seconds field, and the
// @hourly, @daily, @weekly, @monthly, @yearly and @every descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse checks a cron expression. Time zones come from the entry's
// time_zone, not from a CRON_TZ= prefix.
func Parse(expr string) (cron.Schedule, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("set the time zone with time_zone, not in the expression")
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid cron expression: %w", err)
	}
	return s, nil
}
