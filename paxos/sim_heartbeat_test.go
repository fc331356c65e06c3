package paxos

import "flag"

// flagSimHeartbeat is the leader's heartbeat period, in ticks, in the
// simulations. It stays 1 by default so seeds found and replayed earlier
// keep their traces; production derives it from the election timeout
// (heartbeatTicks: 2 at the defaults), which -sim-heartbeat-ticks=2 runs.
var flagSimHeartbeat = flag.Int("sim-heartbeat-ticks", 1, "leader heartbeat period in ticks in the simulations (production: 2)")
