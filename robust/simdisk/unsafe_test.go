package simdisk

import "unsafe"

func unsafePointer(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
