package preflight

import (
	"context"
	"fmt"
	"os"
	"strings"
)

const clocksourceDir = "/sys/devices/system/clocksource/clocksource0"

// goodClocksources read a hardware counter: cheap, fine-grained and
// steady. The master lease is timed on the monotonic clock, whose rate
// must not wander between nodes beyond drift_margin.
var goodClocksources = map[string]bool{
	"tsc": true, "kvm-clock": true,
	"arch_sys_counter": true, "hyperv_clocksource_tsc_page": true, // arm64, Hyper-V guests
}

// CheckClock checks the kernel's clocksource and whether the clock is
// kept in sync.
func CheckClock(ctx context.Context, env *Env) []Result {
	return []Result{checkClocksource(env), checkTimeSync(ctx, env)}
}

func checkClocksource(env *Env) Result {
	const name = "clocksource"
	b, err := os.ReadFile(env.sys(clocksourceDir + "/current_clocksource"))
	if err != nil {
		return warn(name, "none known; run on a Linux host with /sys mounted", "cannot read the clocksource: %v", err)
	}
	cur := strings.TrimSpace(string(b))
	if goodClocksources[cur] {
		return ok(name, "%s", cur)
	}
	avail, _ := os.ReadFile(env.sys(clocksourceDir + "/available_clocksource"))
	better := ""
	for _, c := range strings.Fields(string(avail)) {
		if goodClocksources[c] {
			better = c
			break
		}
	}
	fix := "use a host whose kernel offers tsc or kvm-clock (a coarse or drifting clock skews the master lease)"
	if better != "" {
		fix = fmt.Sprintf("echo %s | sudo tee %s/current_clocksource, and boot with clocksource=%s to keep it", better, clocksourceDir, better)
	}
	return warn(name, fix, "%s: the master lease is timed on this clock; a coarse or unstable one (e.g. jiffies, hpet falling back) eats into drift_margin", cur)
}

// checkTimeSync asks systemd-timesyncd, timedatectl and chronyd, in that
// order, whether the wall clock is synchronized. Only a warn: the lease
// uses the monotonic clock, but certificates and logs use wall time.
func checkTimeSync(ctx context.Context, env *Env) Result {
	const name = "time sync"
	const fix = "run a time sync daemon: sudo apt-get install chrony (or sudo timedatectl set-ntp true)"
	if _, err := os.Stat(env.sys("/run/systemd/timesync/synchronized")); err == nil {
		return ok(name, "systemd-timesyncd reports the clock synchronized")
	}
	if out, err := env.Run(ctx, "timedatectl", "show", "-p", "NTPSynchronized", "--value"); err == nil {
		if strings.TrimSpace(string(out)) == "yes" {
			return ok(name, "timedatectl: NTPSynchronized=yes")
		}
		// systemd says no; chrony may still run without telling it
	}
	if out, err := env.Run(ctx, "chronyc", "-n", "tracking"); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			k, v, _ := strings.Cut(l, ":")
			if strings.TrimSpace(k) == "Leap status" {
				if v = strings.TrimSpace(v); v == "Normal" || strings.HasPrefix(v, "Insert") || strings.HasPrefix(v, "Delete") {
					return ok(name, "chronyd: leap status %s", v)
				}
				return warn(name, "check chronyd's sources: chronyc sources", "chronyd runs but is not synchronized (leap status %s)", v)
			}
		}
	}
	return warn(name, fix, "no synchronized time service found (checked /run/systemd/timesync, timedatectl, chronyc); certificate validity and log times use the wall clock")
}
