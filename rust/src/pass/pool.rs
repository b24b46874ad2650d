//! Column buffers lent to Arrow and given back: the rows the pass hands over become Arrow
//! buffers that Python writes to Parquet and then drops. A fresh buffer for every column of
//! every batch is fresh memory that the kernel must fault in and zero, page by page; a buffer
//! Arrow is done with comes back here instead, and the next batch's column is written into it.

use std::panic::RefUnwindSafe;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Weak};

use arrow_buffer::{ArrowNativeType, Buffer, ScalarBuffer};

/// The most buffers of one type kept for reuse: more than the batches in flight at once (the
/// writer's queue and the batch being written) ever lend, fewer than unbounded.
const KEPT: usize = 256;

type Shelf<T> = Mutex<Vec<Vec<T>>>;

/// Vectors of T to write columns into, lent to Arrow and taken back when it drops them.
pub struct Pool<T> {
    free: Arc<Shelf<T>>,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool {
            free: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<T: ArrowNativeType + RefUnwindSafe> Pool<T> {
    /// An empty vector with room for `capacity` values: one given back if there is one.
    pub fn take(&self, capacity: usize) -> Vec<T> {
        let kept = self.free.lock().ok().and_then(|mut free| free.pop());
        // one too small is dropped, not grown: growing an empty vector copies its old memory
        match kept {
            Some(v) if v.capacity() >= capacity => v,
            _ => Vec::with_capacity(capacity),
        }
    }

    /// v's values as an Arrow buffer, sharing v's memory; v comes back to the pool when the
    /// buffer (and every slice of it) is dropped, wherever that happens.
    pub fn lend(&self, v: Vec<T>) -> ScalarBuffer<T> {
        let len = v.len();
        let bytes = std::mem::size_of_val(v.as_slice());
        let ptr = NonNull::new(v.as_ptr() as *mut u8).expect("a vector's pointer is never null");
        let owner = Arc::new(Lent {
            values: v,
            home: Arc::downgrade(&self.free),
        });
        // SAFETY: ptr points at `bytes` initialised bytes of owner's vector, whose heap memory
        // neither moves nor changes while the owner lives (it is never touched until dropped),
        // and the buffer holds the owner as long as it is used.
        let buffer = unsafe { Buffer::from_custom_allocation(ptr, bytes, owner) };
        ScalarBuffer::new(buffer, 0, len)
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.free.lock().map(|f| f.len()).unwrap_or(0)
    }
}

/// A vector Arrow holds; back to its pool (if the pool is still there) when Arrow lets go.
struct Lent<T> {
    values: Vec<T>,
    home: Weak<Shelf<T>>,
}

impl<T> Drop for Lent<T> {
    fn drop(&mut self) {
        let Some(home) = self.home.upgrade() else {
            return;
        };
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        let Ok(mut free) = home.lock() else {
            return;
        };
        if free.len() < KEPT {
            free.push(values);
        }
    }
}

/// The pools of the column types the pass writes.
#[derive(Default)]
pub struct Pools {
    pub i64: Pool<i64>,
    pub i32: Pool<i32>,
    /// Bitmaps, a word at a time.
    pub u64: Pool<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_arrow_drops_comes_back_with_its_memory() {
        let pool = Pool::<i64>::default();
        let mut v = pool.take(1000);
        v.extend([1, 2, 3]);
        let at = v.as_ptr();
        let buffer = pool.lend(v);
        assert_eq!(&buffer[..], &[1, 2, 3]);
        let slice = buffer.slice(1, 1);
        drop(buffer);
        assert_eq!(pool.kept(), 0); // a slice still holds it
        assert_eq!(&slice[..], &[2]);
        drop(slice);
        assert_eq!(pool.kept(), 1);
        let again = pool.take(10);
        assert!(again.is_empty() && again.capacity() >= 1000);
        assert_eq!(again.as_ptr(), at);
    }

    #[test]
    fn a_buffer_outliving_its_pool_is_freed() {
        let pool = Pool::<i32>::default();
        let mut v = pool.take(4);
        v.push(7);
        let buffer = pool.lend(v);
        drop(pool);
        assert_eq!(&buffer[..], &[7]);
    }
}
