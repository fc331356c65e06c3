package wire

import (
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
)

// NativePlugin is the only authentication method the proxy speaks.
const NativePlugin = "mysql_native_password"

// NewSalt returns 20 random bytes that avoid NUL, as MariaDB's do.
func NewSalt() []byte {
	s := make([]byte, 20)
	_, _ = rand.Read(s)
	for i := range s {
		s[i] = s[i]&0x7f | 0x01
		if s[i] == '$' {
			s[i] = '%'
		}
	}
	return s
}

// ScrambleFromStage1 computes the mysql_native_password token from
// stage1 = SHA1(password): stage1 XOR SHA1(salt + SHA1(stage1)). An empty
// stage1 (empty password) gives an empty token.
func ScrambleFromStage1(salt, stage1 []byte) []byte {
	if len(stage1) == 0 {
		return nil
	}
	stage2 := sha1.Sum(stage1)
	h := sha1.New()
	h.Write(salt)
	h.Write(stage2[:])
	x := h.Sum(nil)
	for i := range x {
		x[i] ^= stage1[i]
	}
	return x
}

// Stage1FromToken recovers SHA1(password) from a client's token given the
// stored SHA1(SHA1(password)) and checks it. ok is false when the token
// does not match stored. An empty stored hash accepts only an empty token.
func Stage1FromToken(salt, token, stored []byte) (stage1 []byte, ok bool) {
	if len(stored) == 0 {
		return nil, len(token) == 0
	}
	if len(token) != sha1.Size || len(stored) != sha1.Size {
		return nil, false
	}
	h := sha1.New()
	h.Write(salt)
	h.Write(stored)
	x := h.Sum(nil)
	for i := range x {
		x[i] ^= token[i]
	}
	check := sha1.Sum(x)
	if subtle.ConstantTimeCompare(check[:], stored) != 1 {
		return nil, false
	}
	return x, true
}
