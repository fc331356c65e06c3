package sqlproxy

import "time"

// Refusals before login are logged at most once per refusalLogEvery per
// kind (package ratelog): each is a stranger's connection, and one line
// per connection let a flood of them write 29 MB of log in 1.4 s with
// 60,000-character user names (audit, December 2026). The metrics count
// every refusal.
const refusalLogEvery = 10 * time.Second

// maxLoggedUser bounds the user name a log line quotes.
const maxLoggedUser = 80
