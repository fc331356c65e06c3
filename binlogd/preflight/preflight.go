package preflight

import "context"

// Run runs every check against env, in the order an operator fixes
// things: the config first (the rest read it; when it is not even JSON
// only the host checks run), then MariaDB, ports, directories and
// permissions, clock, disk (and how the log flushes), certificates,
// credentials.
func Run(ctx context.Context, env *Env) []Result {
	out := CheckConfig(env)
	out = append(out, CheckMariaDB(ctx, env)...)
	if env.Config != nil {
		out = append(out, CheckMySQLExtra(env.Config.MySQLExtra, env.ConfigPath, env.Config.GroupCommitWaitOrDefault())...)
		out = append(out, CheckPorts(ctx, env)...)
		out = append(out, CheckDirs(env)...)
		out = append(out, CheckSecretFiles(env)...)
	}
	out = append(out, CheckClock(ctx, env)...)
	if env.Config != nil {
		out = append(out, CheckDisk(env)...)
		out = append(out, checkIOURing(env.Config.UseIOURing()))
		out = append(out, checkPriority(env.Config.CPUNiceOrDefault(), env.Config.MySQLNiceOrDefault()))
		out = append(out, CheckCerts(env)...)
		out = append(out, CheckCredentials(env)...)
	}
	return out
}
