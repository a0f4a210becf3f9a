//! SQLite's memory, taken from the process's Rust allocator instead of the C library's malloc.
//!
//! Why: the writer thread's SQLite allocations lived in a glibc arena of their own, which glibc
//! trims with `madvise` whenever its top grows past the trim threshold and shrinks again. Under
//! load that was two `madvise` calls per task on the writer, each flushing the TLB of every core
//! (an inter-processor interrupt), and the page faults to map the memory back: about a tenth of
//! the harness's CPU at 32 connections. Routed through the global allocator (mimalloc in the
//! binary), the writer reuses its memory like every other thread does.
//!
//! SQLite takes its allocator once per process, before it initialises; [`install`] is called by
//! every [`super::Store`] open and does its work on the first call only. When something else in
//! the process initialised SQLite first, SQLite keeps its own allocator (and says so at debug).

use std::alloc::{Layout, alloc, dealloc, realloc};
use std::ffi::{c_int, c_void};
use std::sync::Once;

use rusqlite::ffi;

/// Bytes before each block, holding the size SQLite asked for (SQLite's `xSize` needs it back).
/// Eight keeps the block 8-byte aligned, which is what SQLite requires.
const HEADER: usize = 8;
/// The alignment of every block: SQLite's requirement.
const ALIGN: usize = 8;

/// Blocks handed to SQLite so far, so a test can tell that SQLite allocates here.
#[cfg(test)]
static BLOCKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Hands SQLite the process's allocator, once, before SQLite initialises.
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: `sqlite3_config(SQLITE_CONFIG_MALLOC, *const sqlite3_mem_methods)` copies the
        // structure; the functions it names live for the whole process. SQLite refuses (MISUSE)
        // once it has initialised, and nothing changes then.
        let rc = unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_MALLOC,
                &methods as *const ffi::sqlite3_mem_methods,
            )
        };
        if rc != ffi::SQLITE_OK {
            tracing::debug!(
                rc,
                "SQLite was initialised already and keeps its own allocator"
            );
        }
    });
}

/// The layout of a block holding `size` bytes for SQLite, header included.
fn layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(HEADER)?, ALIGN).ok()
}

/// SAFETY (for the functions below): SQLite calls them as its `sqlite3_mem_methods` contract
/// says: `x_free`, `x_realloc` and `x_size` only with pointers `x_malloc` or `x_realloc`
/// returned (or null), so the header before each pointer is ours.
unsafe extern "C" fn x_malloc(size: c_int) -> *mut c_void {
    let Ok(size) = usize::try_from(size) else {
        return std::ptr::null_mut();
    };
    let Some(layout) = layout(size).filter(|_| size > 0) else {
        return std::ptr::null_mut();
    };
    #[cfg(test)]
    BLOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the layout has a non-zero size (the header at least).
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the block is at least HEADER bytes long and 8-byte aligned.
    unsafe {
        (base as *mut usize).write(size);
        base.add(HEADER) as *mut c_void
    }
}

unsafe extern "C" fn x_free(block: *mut c_void) {
    if block.is_null() {
        return;
    }
    // SAFETY: `block` came from `x_malloc` or `x_realloc`, HEADER bytes into its allocation.
    unsafe {
        let base = (block as *mut u8).sub(HEADER);
        let size = (base as *const usize).read();
        if let Some(layout) = layout(size) {
            dealloc(base, layout);
        }
    }
}

unsafe extern "C" fn x_realloc(block: *mut c_void, size: c_int) -> *mut c_void {
    if block.is_null() {
        // SAFETY: as for a fresh allocation.
        return unsafe { x_malloc(size) };
    }
    let Ok(new_size) = usize::try_from(size) else {
        return std::ptr::null_mut();
    };
    let Some(new_layout) = layout(new_size).filter(|_| new_size > 0) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `block` is ours (see above); the old layout is the one it was allocated with, and
    // the new size is non-zero and fits a layout. On failure the old block stays valid, as
    // SQLite expects.
    unsafe {
        let base = (block as *mut u8).sub(HEADER);
        let old_size = (base as *const usize).read();
        let Some(old_layout) = layout(old_size) else {
            return std::ptr::null_mut();
        };
        let grown = realloc(base, old_layout, new_layout.size());
        if grown.is_null() {
            return std::ptr::null_mut();
        }
        (grown as *mut usize).write(new_size);
        grown.add(HEADER) as *mut c_void
    }
}

unsafe extern "C" fn x_size(block: *mut c_void) -> c_int {
    if block.is_null() {
        return 0;
    }
    // SAFETY: `block` is ours (see above).
    let size = unsafe { ((block as *mut u8).sub(HEADER) as *const usize).read() };
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

/// SQLite asks how much a request would really take: a multiple of the alignment.
extern "C" fn x_roundup(size: c_int) -> c_int {
    size.checked_add(ALIGN as c_int - 1)
        .map_or(size, |s| s & !(ALIGN as c_int - 1))
}

extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

extern "C" fn x_shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_allocates_through_the_process_allocator() {
        let before = BLOCKS.load(std::sync::atomic::Ordering::Relaxed);
        let store = crate::state::store::Store::open_in_memory().expect("store");
        assert_eq!(store.task("none").expect("read"), None);
        assert!(
            BLOCKS.load(std::sync::atomic::Ordering::Relaxed) > before,
            "SQLite's allocations come through x_malloc"
        );
    }

    #[test]
    fn blocks_keep_their_size_and_contents_through_realloc() {
        // SAFETY: the functions are called as SQLite would call them.
        unsafe {
            let block = x_malloc(24) as *mut u8;
            assert!(!block.is_null());
            assert_eq!(block as usize % ALIGN, 0, "8-byte aligned");
            assert_eq!(x_size(block as *mut c_void), 24);
            for i in 0..24 {
                block.add(i).write(i as u8);
            }
            let grown = x_realloc(block as *mut c_void, 4_000) as *mut u8;
            assert_eq!(x_size(grown as *mut c_void), 4_000);
            for i in 0..24 {
                assert_eq!(grown.add(i).read(), i as u8, "contents kept");
            }
            x_free(grown as *mut c_void);
            assert!(x_malloc(0).is_null());
            assert!(x_malloc(-1).is_null());
            assert_eq!(x_size(std::ptr::null_mut()), 0);
            x_free(std::ptr::null_mut());
        }
        assert_eq!(x_roundup(1), 8);
        assert_eq!(x_roundup(16), 16);
        assert_eq!(x_roundup(c_int::MAX), c_int::MAX);
    }
}
