package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEventHookKeys(t *testing.T) {
	body := strings.Replace(good, `"dir":"n1",`, `"dir":"n1","event_hook":["/bin/sh","-c","cat >> /tmp/x"],"event_hook_timeout":"3s",`, 1)
	c, err := loadBody(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.EventHook, []string{"/bin/sh", "-c", "cat >> /tmp/x"}) || c.EventHookTimeout.Duration != 3*time.Second {
		t.Fatalf("loaded %+v", c.Events)
	}
	for _, bad := range []struct{ set, key string }{
		{`"event_hook":["no-such-hook-program-xyz"],`, "event_hook"},
		{`"event_hook":[""],`, "event_hook"},
		{`"event_hook_timeout":"-1s",`, "event_hook_timeout"},
		{`"event_hook_timeout":"1h",`, "event_hook_timeout"},
	} {
		body := strings.Replace(good, `"dir":"n1",`, `"dir":"n1",`+bad.set, 1)
		_, err := loadBody(t, body)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%s: error does not name %s: %v", bad.set, bad.key, err)
		}
	}
}
