package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd starts n embedded etcd members in dir (fsync on, the
// default) and returns a put function bound to the leader, and a stop.
func startEtcd(dir string, n int) (put func(ctx context.Context, key string, v []byte) error, stop func()) {
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	type member struct{ peer, client url.URL }
	var ms []member
	var initial []string
	for i := 1; i <= n; i++ {
		m := member{
			peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port())},
			client: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port())},
		}
		ms = append(ms, m)
		initial = append(initial, fmt.Sprintf("m%d=%s", i, m.peer.String()))
	}
	var etcds []*embed.Etcd
	for i, m := range ms {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i+1)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.peer}, []url.URL{m.peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.client}, []url.URL{m.client}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "bench"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.LogLevel = "error"
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			log.Fatal(err)
		}
		etcds = append(etcds, e)
	}
	for _, e := range etcds {
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			log.Fatal("etcd not ready after 60 s")
		}
	}
	var leader int
	for deadline := time.Now().Add(30 * time.Second); ; {
		for i, e := range etcds {
			if e.Server.Leader() == e.Server.MemberID() {
				leader = i
			}
		}
		if etcds[leader].Server.Leader() == etcds[leader].Server.MemberID() {
			break
		}
		if time.Now().After(deadline) {
			log.Fatal("no etcd leader after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ms[leader].client.String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Fatal(err)
	}
	put = func(ctx context.Context, key string, v []byte) error {
		_, err := cli.Put(ctx, key, string(v))
		return err
	}
	stop = func() {
		cli.Close()
		for _, e := range etcds {
			e.Close()
		}
	}
	return put, stop
}
