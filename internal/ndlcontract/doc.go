// Package ndlcontract runs the ndl backend contract (runtime/ndl/ndltest)
// against the backends built on the simulated device: the in-process
// *sim.Device and the remote client (runtime/ndl/remote) of a server that
// serves one. The kernel backend runs it in runtime/ndl/ndltest itself,
// against the driver's fake.
//
// It lives outside runtime/ because it imports sim/ (DESIGN.md, the one
// rule: runtime/ never imports sim/, not even in tests of new code), and has
// no code of its own beyond its tests.
package ndlcontract
