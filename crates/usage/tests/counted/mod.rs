//! A global allocator that counts what is live on the heap — bytes asked for and blocks — over
//! another allocator: every small long-lived block pins an allocator page the process cannot give
//! back while it lives (issue 30), so how many there are matters as much as their bytes. Shared
//! by the heap test (`tests/heap.rs`) and the `usage_memory` example.

// A `GlobalAlloc` impl is `unsafe` by its trait; each call is passed on unchanged, the counters
// only observe.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, Ordering};

/// `A`, counting its live bytes and blocks.
pub struct Counted<A> {
    inner: A,
    bytes: AtomicIsize,
    blocks: AtomicIsize,
}

impl<A> Counted<A> {
    pub const fn new(inner: A) -> Self {
        Counted {
            inner,
            bytes: AtomicIsize::new(0),
            blocks: AtomicIsize::new(0),
        }
    }

    /// The bytes live now (as asked for: the allocator's size classes round up).
    pub fn bytes(&self) -> isize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The blocks live now.
    pub fn blocks(&self) -> isize {
        self.blocks.load(Ordering::Relaxed)
    }

    fn allocated(&self, block: *mut u8, size: usize) -> *mut u8 {
        if !block.is_null() {
            self.bytes.fetch_add(size as isize, Ordering::Relaxed);
            self.blocks.fetch_add(1, Ordering::Relaxed);
        }
        block
    }
}

// SAFETY: every call is passed on unchanged to the wrapped allocator.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counted<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocated(unsafe { self.inner.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.allocated(unsafe { self.inner.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        self.bytes
            .fetch_sub(layout.size() as isize, Ordering::Relaxed);
        self.blocks.fetch_sub(1, Ordering::Relaxed);
        unsafe { self.inner.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { self.inner.realloc(block, layout, new_size) };
        if !moved.is_null() {
            self.bytes.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        moved
    }
}
