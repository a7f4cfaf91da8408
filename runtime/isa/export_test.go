package isa

// MsgPlaceDisagrees exposes msgPlaceDisagrees to the external tests.
const MsgPlaceDisagrees = msgPlaceDisagrees
