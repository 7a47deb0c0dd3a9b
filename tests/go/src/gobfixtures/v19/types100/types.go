// Package types100 mirrors containernetworking/cni v1.3.0's
// pkg/types/100 result shapes (see ../types).
package types100

import (
	"net"

	"gobfixtures/v19/types"
)

type Result struct {
	CNIVersion string
	Interfaces []*Interface
	IPs        []*IPConfig
	Routes     []*types.Route
	DNS        types.DNS
}

type Interface struct {
	Name       string
	Mac        string
	Mtu        int
	Sandbox    string
	SocketPath string
	PciID      string
}

type IPConfig struct {
	Interface *int
	Address   net.IPNet
	Gateway   net.IP
}
