// Package types mirrors the shapes of containernetworking/cni v1.3.0's
// pkg/types that gob carries (the cni library of plugins v1.9), with the
// same package and type names, so gob writes the same type definitions.
package types

import "net"

type Route struct {
	Dst      net.IPNet
	GW       net.IP
	MTU      int
	AdvMSS   int
	Priority int
	Table    *int
	Scope    *int
}

type DNS struct {
	Nameservers []string
	Domain      string
	Search      []string
	Options     []string
}
