package preflight

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestCheckClocksource(t *testing.T) {
	for _, c := range []struct {
		cur, avail string
		want       Status
		fix        string
	}{
		{"tsc", "tsc hpet acpi_pm", OK, ""},
		{"kvm-clock", "kvm-clock tsc", OK, ""},
		{"jiffies", "tsc jiffies", Warn, "echo tsc | sudo tee"},
		{"hpet", "hpet acpi_pm", Warn, "use a host whose kernel offers tsc"},
	} {
		env := testEnv(t)
		dir := filepath.Join(env.Root, clocksourceDir)
		writeFile(t, filepath.Join(dir, "current_clocksource"), c.cur+"\n", 0o644)
		writeFile(t, filepath.Join(dir, "available_clocksource"), c.avail+"\n", 0o644)
		want1(t, []Result{checkClocksource(env)}, c.want, c.cur, c.fix)
	}
	want1(t, []Result{checkClocksource(testEnv(t))}, Warn, "cannot read", "")
}

func TestCheckTimeSync(t *testing.T) {
	ctx := context.Background()
	stub := func(outs map[string]string) func(context.Context, string, ...string) ([]byte, error) {
		return func(_ context.Context, name string, _ ...string) ([]byte, error) {
			if o, found := outs[name]; found {
				return []byte(o), nil
			}
			return nil, errors.New("not found")
		}
	}
	env := testEnv(t)
	want1(t, []Result{checkTimeSync(ctx, env)}, Warn, "no synchronized time service", "apt-get install chrony")

	env.Run = stub(map[string]string{"timedatectl": "yes\n"})
	want1(t, []Result{checkTimeSync(ctx, env)}, OK, "NTPSynchronized=yes", "")

	env.Run = stub(map[string]string{"timedatectl": "no\n", "chronyc": "Reference ID    : 0A000001 (10.0.0.1)\nLeap status     : Normal\n"})
	want1(t, []Result{checkTimeSync(ctx, env)}, OK, "chronyd", "")

	env.Run = stub(map[string]string{"chronyc": "Leap status     : Not synchronised\n"})
	want1(t, []Result{checkTimeSync(ctx, env)}, Warn, "not synchronized", "chronyc sources")

	env.Run = stub(nil)
	writeFile(t, filepath.Join(env.Root, "/run/systemd/timesync/synchronized"), "", 0o644)
	want1(t, []Result{checkTimeSync(ctx, env)}, OK, "systemd-timesyncd", "")
}
