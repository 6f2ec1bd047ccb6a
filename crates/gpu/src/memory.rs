//! RAII buffers over the driver's allocations: page-locked host memory ([`Pinned`], which
//! asynchronous copies need) and device memory ([`DevBuf`]), each freed once when dropped.
//!
//! The pipelines that use them synchronise on their own events before a buffer is reused or
//! dropped, which is why these hold raw pointers rather than cudarc's tracked slices.

use crate::error::{device_err, Error};
use cudarc::driver::{result, sys};

/// Page-locked host memory from cuMemHostAlloc: `len` elements of `T` (at least one).
pub struct Pinned<T: Copy> {
    ptr: *mut T,
    len: usize,
}

impl<T: Copy> Pinned<T> {
    /// A buffer of `len` elements (one if `len` is 0), uninitialised until written.
    pub fn new(len: usize) -> Result<Self, Error> {
        let bytes = len.max(1) * std::mem::size_of::<T>();
        // SAFETY: plain page-locked allocation; the memory is only read after being written.
        let ptr = unsafe { result::malloc_host(bytes, 0) }
            .map_err(|e| device_err("cuMemHostAlloc", e))?;
        Ok(Pinned {
            ptr: ptr as *mut T,
            len: len.max(1),
        })
    }

    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a buffer holds at least one element.
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: ptr holds len elements for the life of self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Copy> Drop for Pinned<T> {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemHostAlloc and is freed once.
        let _ = unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) };
    }
}

/// Device memory from cuMemAlloc (at least 4 bytes).
pub struct DevBuf {
    ptr: sys::CUdeviceptr,
}

impl DevBuf {
    /// `bytes` of device memory (4 if fewer), uninitialised.
    pub fn new(bytes: usize) -> Result<Self, Error> {
        // SAFETY: plain allocation.
        let ptr = unsafe { result::malloc_sync(bytes.max(4)) }
            .map_err(|e| device_err("cuMemAlloc", e))?;
        Ok(DevBuf { ptr })
    }

    /// The device address, for copies and kernel arguments.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc; all work using it has been synchronised.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}
