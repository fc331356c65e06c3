package liblog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/grpclog"
)

// Install routes go-sql-driver/mysql's and gRPC's logging to l.
func Install(l *slog.Logger) {
	_ = mysql.SetLogger(driverLogger{l.With("lib", "mysql")})
	grpclog.SetLoggerV2(grpcLogger{l: l.With("lib", "grpc")})
}

// driverLogger is go-sql-driver's Logger interface (Print(v ...any)).
// The driver logs only problems (bad connections, protocol surprises),
// so its lines are warnings.
type driverLogger struct{ l *slog.Logger }

func (d driverLogger) Print(v ...any) {
	d.l.Warn(strings.TrimSpace(fmt.Sprint(v...)))
}

// grpcLogger implements grpclog.LoggerV2.
type grpcLogger struct{ l *slog.Logger }

func (g grpcLogger) log(level slog.Level, msg string) {
	g.l.Log(context.Background(), level, strings.TrimSpace(msg))
}

func (g grpcLogger) Info(args ...any)   { g.log(slog.LevelDebug, fmt.Sprint(args...)) }
func (g grpcLogger) Infoln(args ...any) { g.log(slog.LevelDebug, fmt.Sprintln(args...)) }
func (g grpcLogger) Infof(format string, args ...any) {
	g.log(slog.LevelDebug, fmt.Sprintf(format, args...))
}
func (g grpcLogger) Warning(args ...any)   { g.log(slog.LevelWarn, fmt.Sprint(args...)) }
func (g grpcLogger) Warningln(args ...any) { g.log(slog.LevelWarn, fmt.Sprintln(args...)) }
func (g grpcLogger) Warningf(format string, args ...any) {
	g.log(slog.LevelWarn, fmt.Sprintf(format, args...))
}
func (g grpcLogger) Error(args ...any)   { g.log(slog.LevelError, fmt.Sprint(args...)) }
func (g grpcLogger) Errorln(args ...any) { g.log(slog.LevelError, fmt.Sprintln(args...)) }
func (g grpcLogger) Errorf(format string, args ...any) {
	g.log(slog.LevelError, fmt.Sprintf(format, args...))
}

// Fatal logs like gRPC's default logger and exits: gRPC calls it only
// for broken invariants.
func (g grpcLogger) Fatal(args ...any) { g.log(slog.LevelError, fmt.Sprint(args...)); os.Exit(1) }
func (g grpcLogger) Fatalln(args ...any) {
	g.log(slog.LevelError, fmt.Sprintln(args...))
	os.Exit(1)
}
func (g grpcLogger) Fatalf(format string, args ...any) {
	g.log(slog.LevelError, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// V reports whether verbosity level v is on; gRPC asks before building
// expensive messages. Only level 0 is logged.
func (g grpcLogger) V(v int) bool { return v <= 0 }
