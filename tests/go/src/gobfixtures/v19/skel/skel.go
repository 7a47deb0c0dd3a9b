// Package skel mirrors containernetworking/cni v1.3.0's skel.CmdArgs.
package skel

type CmdArgs struct {
	ContainerID   string
	Netns         string
	IfName        string
	Args          string
	Path          string
	NetnsOverride string
	StdinData     []byte
}
