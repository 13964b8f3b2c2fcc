package metrics

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// This file: the metric families and the Prometheus text exposition format
// (version 0.0.4). The bridge keeps its own small implementation instead of
// the Prometheus client library: that library's package initialisation
// (default registry, Go and process collectors, protobuf) runs in every
// agentbridge process — each `run`, each shim started per turn — and cost
// about 1 ms of start-up and 9 MB of binary (BENCHMARKS.md, start-up),
// for what only serve uses.

// Metric kinds, as # TYPE names them.
const (
	kindCounter   = "counter"
	kindGauge     = "gauge"
	kindHistogram = "histogram"
)

// family is one metric family: its series, by label values.
type family struct {
	name, help, kind string
	labels           []string
	buckets          []float64 // upper bounds, ascending; histograms only

	mu     sync.Mutex
	series map[string]*series // key: the label values joined by "\xff"
}

// series is one labelled series of a family.
type series struct {
	values []string
	value  float64  // counters and gauges
	counts []uint64 // histograms: observations per bucket (not cumulative)
	sum    float64
	count  uint64
}

func newFamily(kind, name, help string, labels ...string) *family {
	return &family{name: name, help: help, kind: kind, labels: labels, series: map[string]*series{}}
}

// get returns the series of values, creating it at zero. f.mu is held.
func (f *family) get(values []string) *series {
	key := strings.Join(values, "\xff")
	s := f.series[key]
	if s == nil {
		s = &series{values: slices.Clone(values)}
		if f.kind == kindHistogram {
			s.counts = make([]uint64, len(f.buckets))
		}
		f.series[key] = s
	}
	return s
}

// touch creates the series of values at zero, if it is not there yet.
func (f *family) touch(values ...string) {
	f.mu.Lock()
	f.get(values)
	f.mu.Unlock()
}

// add adds d to a counter or gauge series.
func (f *family) add(d float64, values ...string) {
	f.mu.Lock()
	f.get(values).value += d
	f.mu.Unlock()
}

// observe records v in a histogram series.
func (f *family) observe(v float64, values ...string) {
	f.mu.Lock()
	s := f.get(values)
	if i, _ := slices.BinarySearch(f.buckets, v); i < len(s.counts) {
		s.counts[i]++ // the first bucket whose bound is ≥ v
	}
	s.sum += v
	s.count++
	f.mu.Unlock()
}

// write prints the family in the text format, its series sorted by label
// values; a family with no series prints nothing.
func (f *family) write(w *bufio.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.series) == 0 {
		return
	}
	w.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
	w.WriteString("# TYPE " + f.name + " " + f.kind + "\n")
	keys := make([]string, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := f.series[k]
		if f.kind != kindHistogram {
			writeSample(w, f.name, f.labels, s.values, "", s.value)
			continue
		}
		var cum uint64
		for i, b := range f.buckets {
			cum += s.counts[i]
			writeSample(w, f.name+"_bucket", f.labels, s.values, formatFloat(b), float64(cum))
		}
		writeSample(w, f.name+"_bucket", f.labels, s.values, "+Inf", float64(s.count))
		writeSample(w, f.name+"_sum", f.labels, s.values, "", s.sum)
		writeSample(w, f.name+"_count", f.labels, s.values, "", float64(s.count))
	}
}

// writeSample prints one sample line: name{label="value",…[,le="…"]} value.
func writeSample(w *bufio.Writer, name string, labels, values []string, le string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || le != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l + `="` + escapeLabel(values[i]) + `"`)
		}
		if le != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`le="` + le + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteString(" " + formatFloat(v) + "\n")
}

// gauge prints a family of one unlabelled gauge or counter sample.
func gauge(w *bufio.Writer, kind, name, help string, v float64) {
	w.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n# TYPE " + name + " " + kind + "\n")
	writeSample(w, name, nil, nil, "", v)
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

// exponentialBuckets returns n bucket bounds: start, start×factor, ….
func exponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}
