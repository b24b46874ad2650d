//! Column buffers used again from chunk to chunk. Each chunk the text scanner reads fills a
//! dozen columns of a few hundred KiB; freed, the allocator hands such blocks back to the
//! kernel, and the next chunk's columns take their pages again, each one faulted in and
//! zeroed. A buffer handed over as Arrow comes back here when its last user lets go of it,
//! and the next chunk writes into memory already mapped.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow_buffer::{ArrowNativeType, Buffer, ScalarBuffer};

/// Bytes of buffers a pool keeps while they wait to be used again: a few chunks' columns
/// (more would only hold memory the pipeline, a few chunks deep, never asks for).
const KEPT_BYTES: usize = 16 << 20;

/// Buffers of one value type waiting to be used again.
pub struct Pool<T> {
    kept: Mutex<Vec<Vec<T>>>,
}

impl<T> Pool<T> {
    const fn new() -> Self {
        Pool {
            kept: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<T>>> {
        // a panic while the lock was held leaves only a list of empty buffers: still good
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An empty vector with room for `capacity` values: the smallest kept one that has the
    /// room (a small column must not take a large one's), of those the last given back (its
    /// lines the likeliest still in the cache), else a new one.
    pub fn take(&self, capacity: usize) -> Vec<T> {
        let found = {
            let mut kept = self.lock();
            let fits = kept.iter().enumerate().rev();
            let fits = fits.filter(|(_, v)| v.capacity() >= capacity);
            let at = fits.min_by_key(|(_, v)| v.capacity()).map(|(at, _)| at);
            at.map(|at| kept.remove(at))
        };
        found.unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Keep `values`' memory for a later `take`, unless the pool holds its fill already.
    fn give_back(&self, mut values: Vec<T>) {
        values.clear();
        let size = std::mem::size_of::<T>();
        let mut kept = self.lock();
        let bytes: usize = kept.iter().map(|v| v.capacity() * size).sum();
        if bytes + values.capacity() * size <= KEPT_BYTES {
            kept.push(values);
        }
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().len()
    }
}

/// A value type whose column buffers are used again.
pub trait Recyclable: ArrowNativeType + std::panic::RefUnwindSafe {
    fn pool() -> &'static Pool<Self>;
}

static BYTES: Pool<u8> = Pool::new();
static INT32S: Pool<i32> = Pool::new();
static INT64S: Pool<i64> = Pool::new();

impl Recyclable for u8 {
    fn pool() -> &'static Pool<u8> {
        &BYTES
    }
}

impl Recyclable for i32 {
    fn pool() -> &'static Pool<i32> {
        &INT32S
    }
}

impl Recyclable for i64 {
    fn pool() -> &'static Pool<i64> {
        &INT64S
    }
}

/// The memory under an Arrow buffer made by `buffer_of`: back to its pool when dropped.
struct Lent<T: 'static> {
    values: Vec<T>,
    pool: &'static Pool<T>,
}

impl<T> Drop for Lent<T> {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.values));
    }
}

/// `values` as an Arrow buffer whose memory goes back to the pool of `T` when the last array
/// holding it is dropped (in Python or here), instead of to the allocator.
pub fn buffer_of<T: Recyclable>(values: Vec<T>) -> Buffer {
    lent_from(T::pool(), values)
}

fn lent_from<T: ArrowNativeType + std::panic::RefUnwindSafe>(
    pool: &'static Pool<T>,
    values: Vec<T>,
) -> Buffer {
    let bytes = std::mem::size_of_val(values.as_slice());
    let start = NonNull::new(values.as_ptr() as *mut u8).expect("a vector's pointer is not null");
    // (moving the vector into its owner leaves its heap memory where it is)
    let owner = Arc::new(Lent { values, pool });
    // SAFETY: `start` points at `bytes` initialised bytes of the vector `owner` holds, which
    // neither moves nor frees them before the buffer, its last user, drops it
    unsafe { Buffer::from_custom_allocation(start, bytes, owner) }
}

/// Keep `values`' memory for a later `take` (a column used up before it is handed over).
pub fn recycle<T: Recyclable>(values: Vec<T>) {
    T::pool().give_back(values);
}

/// `values` as a scalar buffer of `buffer_of`.
pub fn scalars_of<T: Recyclable>(values: Vec<T>) -> ScalarBuffer<T> {
    let len = values.len();
    ScalarBuffer::new(buffer_of(values), 0, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_buffer_is_taken_again() {
        static POOL: Pool<i64> = Pool::new();
        let values: Vec<i64> = (0..1000).collect();
        let start = values.as_ptr();
        let buffer = lent_from(&POOL, values);
        let scalars = ScalarBuffer::<i64>::new(buffer.clone(), 0, 1000);
        assert_eq!((scalars[0], scalars[999]), (0, 999));
        drop(buffer);
        assert_eq!(POOL.kept(), 0, "an array still holds it");
        drop(scalars);
        assert_eq!(POOL.kept(), 1);
        assert_eq!(POOL.take(1001).capacity(), 1001, "too small: a new one");
        let again = POOL.take(1000);
        assert_eq!(
            (again.as_ptr(), again.len(), again.capacity()),
            (start, 0, 1000)
        );
        assert_eq!(POOL.kept(), 0);
    }

    #[test]
    fn the_smallest_buffer_with_the_room_is_taken() {
        static POOL: Pool<u8> = Pool::new();
        for capacity in [300, 100, 200] {
            POOL.give_back(Vec::with_capacity(capacity));
        }
        assert_eq!(POOL.take(150).capacity(), 200);
        assert_eq!(POOL.take(50).capacity(), 100);
        assert_eq!(POOL.take(50).capacity(), 300);
    }

    #[test]
    fn of_buffers_alike_the_last_given_back_is_taken_first() {
        static POOL: Pool<u8> = Pool::new();
        let (older, newer) = (Vec::with_capacity(64), Vec::with_capacity(64));
        let (older_at, newer_at) = (older.as_ptr(), newer.as_ptr());
        POOL.give_back(older);
        POOL.give_back(newer);
        let (first, second) = (POOL.take(64), POOL.take(64));
        assert_eq!((first.as_ptr(), second.as_ptr()), (newer_at, older_at));
    }

    #[test]
    fn a_pool_keeps_no_more_than_its_fill() {
        static POOL: Pool<i64> = Pool::new();
        let half = KEPT_BYTES / 8 / 2;
        for _ in 0..3 {
            drop(lent_from(&POOL, Vec::with_capacity(half)));
        }
        assert_eq!(POOL.kept(), 2, "the third is past the fill: freed");
    }

    #[test]
    fn scalars_of_hold_the_values() {
        let scalars = scalars_of(vec![3i32, -1, 7]);
        assert_eq!(&scalars[..], &[3, -1, 7]);
    }
}
