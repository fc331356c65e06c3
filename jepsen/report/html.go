package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"

	"phxgo/jepsen/checker"
)

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"secs":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"info":  infoLine,
	"secs2": func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"pct":   func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"class": func(v checker.Validity) string { return "v-" + string(v) },
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:sans-serif;margin:1.5em;max-width:1000px}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.v-true{color:#070}.v-false{color:#b00;font-weight:bold}.v-unknown{color:#a60}
code{font-size:90%}
</style></head><body>
<h1>{{.Title}}</h1>
<p><code>{{.Line}}</code></p>
<h2>Verdicts</h2>
<table><tr><th>checker</th><th>valid</th><th>anomalies</th><th>figures</th></tr>
{{range .Checks}}<tr><td>{{.Checker}}</td><td class="{{class .Valid}}">{{.Valid}}</td>
<td>{{range .Anomalies}}{{.Kind}}{{if .Key}} key {{.Key}}{{end}}: {{.Detail}}<br>{{end}}</td><td>{{info .Info}}</td></tr>
{{end}}</table>
<h2>Latency</h2>
<p><a href="latency.png"><img src="latency.png" alt="latency of each operation" width="960"></a></p>
<h2>Throughput</h2>
<p><a href="throughput.png"><img src="throughput.png" alt="ok operations per second" width="960"></a></p>
<h2>Fault windows</h2>
{{if .Faults}}<table><tr><th>start s</th><th>heal s</th><th>held s</th><th>fault</th><th>outcome</th></tr>
{{range .Faults}}<tr><td>{{secs .Start}}</td><td>{{secs .Heal}}</td><td>{{secs .Duration}}</td><td>{{.Note}}</td><td>{{.Outcome}}{{if .Error}} ({{.Error}}){{end}}</td></tr>
{{end}}</table>{{else}}<p>none</p>{{end}}
{{if .Windows}}<h3>Availability in each fault window</h3>
<table><tr><th>start s</th><th>heal s</th><th>fault</th><th>ops</th><th>served</th><th>outage s</th><th>recovery s</th><th>longest op s</th></tr>
{{range .Windows}}<tr><td>{{secs .Start}}</td><td>{{secs .Heal}}</td><td>{{.Fault}}</td><td>{{.Ops}}</td><td>{{pct .Avail}}</td><td>{{secs .OutageSeconds}}</td><td>{{secs2 .RecoverySeconds}}</td><td>{{secs .MaxLatencySeconds}}</td></tr>
{{end}}</table>{{end}}
<p>Files: <a href="results.json">results.json</a>, <a href="history.jsonl">history.jsonl</a>, <a href="logs/">logs/</a></p>
</body></html>
`))

// infoLine prints a checker's scalar figures (not its lists) in key order.
func infoLine(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		switch v.(type) {
		case int, int64, float64, string, bool:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		if s != "" {
			s += ", "
		}
		if f, ok := m[k].(float64); ok {
			s += fmt.Sprintf("%s=%.3g", k, f)
		} else {
			s += fmt.Sprintf("%s=%v", k, m[k])
		}
	}
	return s
}

type pageData struct {
	Title  string
	Line   string
	Checks []checker.Result
	Faults []Fault
	// Windows is the availability checker's view of the same faults
	// (served share, outage, recovery), when it ran.
	Windows []checker.Window
}

func writePage(w io.Writer, d pageData) error {
	for _, c := range d.Checks {
		if ws, ok := c.Info["windows"].([]checker.Window); ok {
			d.Windows = append(d.Windows, ws...)
		}
	}
	return page.Execute(w, d)
}
