// Package guesttest boots QEMU guests whose kernel runs the real aws-neuron
// driver (2.24.7.0, ../shared/third_party) against devices that `neuronsim
// serve --vfio-user` serves from the model, and judges what the guest
// prints. Its tests need the tools .ci/guest-tools installs (a Debian
// kernel image and headers, a trixie chroot holding QEMU ≥ 10.1, busybox);
// outside CI they skip, saying what is missing; in CI (CI set) they fail.
//
// The package's non-test code is what a guest is made of: an initramfs
// (a newc cpio archive written here, gzip-compressed) holding busybox, the
// driver module, our static binaries and an /init script that runs a plan
// of commands and marks each result on the console.
package guesttest
