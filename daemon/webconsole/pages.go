package webconsole

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
)

// ReplyLines is how many of a running reply's last lines the live view
// shows.
const ReplyLines = 6

// page is what every page's layout needs.
type page struct {
	Title string
	Nav   string
	CSRF  string
	Who   string
}

type liveData struct {
	page
	Live     []liveRow
	Adapters []Adapter
	Now      time.Time
}

type liveRow struct {
	engine.Live
	Name    string // the channel's and thread's names, where known
	Reply   []string
	Elapsed string
}

func (c *Console) live(op operator) liveData {
	now := c.opts.Now()
	d := liveData{page: page{Title: "Live", Nav: "live", CSRF: op.csrf, Who: op.who}, Now: now}
	for _, l := range c.opts.Engine.Snapshot() {
		row := liveRow{Live: l, Name: c.name(l.Conv), Reply: lastLines(l.Reply, ReplyLines)}
		if !l.Started.IsZero() {
			row.Elapsed = now.Sub(l.Started).Round(time.Second).String()
		}
		d.Live = append(d.Live, row)
	}
	if c.opts.Health != nil {
		d.Adapters = c.opts.Health.Adapters()
	}
	return d
}

func (c *Console) livePage(w http.ResponseWriter, r *http.Request, op operator) {
	c.render(w, http.StatusOK, "live.html", c.live(op))
}

// lastLines is the last n non-empty lines of s.
func lastLines(s string, n int) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out[max(0, len(out)-n):]
}

// events streams the live view: the live part of the page, rendered as
// the page renders it, each time it changes (and a comment now and then,
// so proxies keep the stream open).
func (c *Console) events(w http.ResponseWriter, r *http.Request, op operator) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(c.opts.Refresh)
	defer tick.Stop()
	var last []byte
	quiet := 0
	for {
		var b bytes.Buffer
		if err := pages.ExecuteTemplate(&b, "live-body", c.live(op)); err != nil {
			c.log.Error("console live view failed", "err", err)
			return
		}
		frame := b.Bytes()
		var err error
		switch {
		case !bytes.Equal(frame, last):
			last, quiet = frame, 0
			data, _ := json.Marshal(map[string]string{"html": string(c.redact(frame))})
			_, err = fmt.Fprintf(w, "event: live\ndata: %s\n\n", data)
		case quiet > 30:
			quiet = 0
			_, err = fmt.Fprint(w, ": still here\n\n")
		default:
			quiet++
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// formKey is the conversation a stop or cancel form names.
func formKey(r *http.Request) core.ConversationKey {
	return core.ConversationKey{
		Platform: r.PostFormValue("platform"), Workspace: r.PostFormValue("workspace"),
		Channel: r.PostFormValue("channel"), Thread: r.PostFormValue("thread"),
	}
}

func (c *Console) stop(w http.ResponseWriter, r *http.Request, op operator) {
	key := formKey(r)
	stopped, cancelled := c.opts.Engine.Stop(r.Context(), key, op.who)
	c.log.Info("console stop", "operator", op.who, "conv", key, "stopped", stopped, "cancelled", cancelled)
	c.done(w, r)
}

func (c *Console) cancel(w http.ResponseWriter, r *http.Request, op operator) {
	key := formKey(r)
	n := c.opts.Engine.CancelQueued(r.Context(), key, op.who)
	c.log.Info("console cancel", "operator", op.who, "conv", key, "cancelled", n)
	c.done(w, r)
}

// done answers an action: back to the live view for a browser, 204 for a
// bearer client.
func (c *Console) done(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

type historyData struct {
	page
	Failures  []failureRow
	Schedules []engine.Upcoming
}

type failureRow struct {
	engine.Failure
	Name, Link string
}

func (c *Console) historyPage(w http.ResponseWriter, r *http.Request, op operator) {
	d := historyData{page: page{Title: "History", Nav: "history", CSRF: op.csrf, Who: op.who}}
	for _, f := range c.opts.Engine.Failures() {
		row := failureRow{Failure: f, Name: c.name(f.Conv)}
		if c.opts.Link != nil && f.MsgID != "" {
			row.Link = c.opts.Link(f.Conv, f.MsgID)
		}
		d.Failures = append(d.Failures, row)
	}
	if c.opts.Schedules != nil {
		d.Schedules = c.opts.Schedules.All()
	}
	c.render(w, http.StatusOK, "history.html", d)
}

// UsageDays is how many days the usage page covers.
const UsageDays = 30

type usageData struct {
	page
	Error  string
	Tables []usageTable
}

// usageTable is one breakdown of the usage: its rows and a bar chart of
// them.
type usageTable struct {
	Title string
	Key   string // the first column's heading
	Rows  []usageRow
	Total core.Usage
	Chart chart
}

type usageRow struct {
	Key string
	core.Usage
}

func (c *Console) usagePage(w http.ResponseWriter, r *http.Request, op operator) {
	d := usageData{page: page{Title: "Usage", Nav: "usage", CSRF: op.csrf, Who: op.who}}
	now := c.opts.Now()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	since := today.AddDate(0, 0, -(UsageDays - 1))
	var events []core.UsageEvent
	if c.opts.Usage != nil {
		var err error
		if events, err = c.opts.Usage.UsageSince(r.Context(), since); err != nil {
			c.log.Error("console usage failed", "err", err)
			d.Error = "Could not read the usage log (storage error)."
		}
	}
	days := map[string]*core.Usage{}
	var order []string
	for i := range UsageDays {
		k := since.AddDate(0, 0, i).Format(time.DateOnly)
		days[k], order = &core.Usage{}, append(order, k)
	}
	users, profiles := map[string]*core.Usage{}, map[string]*core.Usage{}
	add := func(m map[string]*core.Usage, k string, u core.Usage) {
		if m[k] == nil {
			m[k] = &core.Usage{}
		}
		m[k].Add(u)
	}
	for _, ev := range events {
		if u := days[ev.At.In(now.Location()).Format(time.DateOnly)]; u != nil {
			u.Add(ev.Usage)
		}
		add(users, ev.Platform+" "+cmp.Or(ev.User, "(nobody)"), ev.Usage)
		add(profiles, cmp.Or(ev.Profile, "(not recorded)"), ev.Usage)
	}
	byCount := func(m map[string]*core.Usage) []string {
		keys := slices.Sorted(maps.Keys(m))
		slices.SortStableFunc(keys, func(a, b string) int { return m[b].Turns - m[a].Turns })
		return keys
	}
	d.Tables = []usageTable{
		table("Per day", "day", order, days),
		table("Per user", "user", byCount(users), users),
		table("Per profile", "profile", byCount(profiles), profiles),
	}
	c.render(w, http.StatusOK, "usage.html", d)
}

func table(title, key string, keys []string, m map[string]*core.Usage) usageTable {
	t := usageTable{Title: title, Key: key}
	for _, k := range keys {
		t.Rows = append(t.Rows, usageRow{Key: k, Usage: *m[k]})
		t.Total.Add(*m[k])
	}
	t.Chart = barChart(t.Rows)
	return t
}

// chart is a horizontal bar chart of turns, drawn as SVG by the template.
type chart struct {
	Width, Height int
	Bars          []bar
}

type bar struct {
	Label       string
	Value       int
	Y, W, TextY int
}

const (
	barHeight = 14
	barGap    = 4
	barLeft   = 110 // room for the label
	barMax    = 260
)

func barChart(rows []usageRow) chart {
	most := 1
	for _, r := range rows {
		most = max(most, r.Turns)
	}
	c := chart{Width: barLeft + barMax + 50, Height: max(1, len(rows)) * (barHeight + barGap)}
	for i, r := range rows {
		label := r.Key
		if rs := []rune(label); len(rs) > 16 {
			label = string(rs[:15]) + "…"
		}
		y := i * (barHeight + barGap)
		c.Bars = append(c.Bars, bar{Label: label, Value: r.Turns, Y: y, W: r.Turns * barMax / most, TextY: y + barHeight - 3})
	}
	return c
}

func (c *Console) name(conv core.ConversationKey) string {
	if c.opts.Name == nil {
		return ""
	}
	return c.opts.Name(conv)
}

// Template helpers.

func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func convName(k core.ConversationKey) string {
	s := k.Channel
	if k.Workspace != "" {
		s = k.Workspace + " / " + s
	}
	if k.Thread != "" {
		s += " / thread " + k.Thread
	}
	return s
}

func who(u core.User, origin string) string {
	switch {
	case origin != "":
		return origin
	case u.Name != "" && u.Name != u.ID:
		return u.Name + " (" + u.ID + ")"
	}
	return u.ID
}
