// Package cli holds the command-line conventions every phxgo binary
// (cmd/*) keeps, so that scripts can tell a typo from a failure:
//
//	-h, -help, --help, help   usage on stderr, exit 0
//	bad usage                 unknown command or flag, a bad flag value, a
//	                          missing required flag, a stray argument:
//	                          the message on stderr, exit 2
//	runtime error             the message on stderr, exit 1
//
// A command parses with Parse (or ParseArgs when it takes positional
// arguments), returns Usagef for what it checks itself, and its main
// ends with os.Exit(cli.Report(os.Stderr, name, err)).
package cli
