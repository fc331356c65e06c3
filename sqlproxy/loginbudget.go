package sqlproxy

import (
	"fmt"
	"time"

	"phxgo/internal/ratelog"
	"phxgo/sqlproxy/wire"
)

// checkFailureBudget refuses a login as user from a client address that
// has spent its budget of failed logins as that user
// (Config.LoginFailureBurst), before the password is checked, with MariaDB's code for a blocked host. A
// password guesser gets one guess per LoginFailureEvery, a client with a
// wrong password configured learns why it stopped getting 1045.
func (sess *session) checkFailureBudget(user string) error {
	s := sess.srv
	blocked, wait := s.loginFails.Blocked(sess.client.NetipAddr(), user, time.Now())
	if !blocked {
		return nil
	}
	s.metrics.refused.WithLabelValues("login_failures").Inc()
	host := sess.client.Addr()
	if ok, held := s.blockedLog.Allow(time.Now()); ok {
		s.log.Warn("sqlproxy: refused a login from a client past its budget of failed logins",
			"client", host, "user", ratelog.Cut(user, maxLoggedUser), "unlogged_before", held)
	}
	werr := &wire.Error{Code: 1129, SQLState: "HY000", Message: fmt.Sprintf(
		"Host '%s' is blocked because of many failed logins; retry in %s", host, wait.Round(time.Millisecond))}
	_ = sess.cl.WriteFlush(werr.Packet())
	return werr
}
