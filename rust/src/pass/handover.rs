//! The rows the pass writes, on their way to Python: turned into Arrow columns a few chunks at
//! a time while they are still in the cache (a batch's rows, held until Python takes them,
//! would have left it), and counted as they are (`Tally`, and the bios' latencies into
//! `StageCounts`).

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;

use super::pool::Pools;
use super::rows::{BioColumns, Names, RequestColumns, CHUNK};
use super::state::Pass;
use super::strings::Dictionary;
use super::tally::Tally;

/// Rows of one table kept as rows before they become columns: a few chunks, a few hundred KB.
pub const STAGED_ROWS: usize = 4 * CHUNK;

/// Room made for the first batch's rows of each table, before one was taken.
const FIRST_ROOM: usize = 1 << 15;

/// The rows handed over since the last take, as columns.
pub struct Handover {
    requests: Option<RequestColumns>,
    bios: Option<BioColumns>,
    /// Room to make for each next batch (requests, bios): the power of two above the most rows
    /// a batch had, so that the columns do not grow by copies, and every batch's buffers fit
    /// the next (the pool drops one too small).
    room: (usize, usize),
    /// Every row handed over, counted.
    pub tally: Tally,
}

impl Default for Handover {
    fn default() -> Self {
        Handover {
            requests: None,
            bios: None,
            room: (FIRST_ROOM, FIRST_ROOM),
            tally: Tally::default(),
        }
    }
}

/// Room for a next batch, after one of `len` rows.
fn room_after(room: usize, len: usize) -> usize {
    room.max(len.next_power_of_two())
}

impl Handover {
    /// Rows handed over and not yet taken, as columns or still as rows (requests + bios).
    pub fn pending(&self, pass: &Pass) -> usize {
        self.requests.as_ref().map_or(0, RequestColumns::len)
            + self.bios.as_ref().map_or(0, BioColumns::len)
            + pass.request_rows.len()
            + pass.bio_rows.len()
    }

    /// Whether enough rows wait as rows to be made columns (`absorb`).
    #[inline(always)]
    pub fn due(pass: &Pass) -> bool {
        pass.bio_rows.len() >= STAGED_ROWS || pass.request_rows.len() >= STAGED_ROWS
    }

    /// Make the pass's rows columns: whole chunks of them (a short chunk only ends a batch),
    /// or, with `all`, every one.
    pub fn absorb(&mut self, pass: &mut Pass, pools: &Pools, all: bool) {
        let whole = |len: usize| if all { len } else { len / CHUNK * CHUNK };
        let n = whole(pass.request_rows.len());
        if n > 0 {
            let rows = &pass.request_rows[..n];
            self.tally.add_requests(rows);
            let room = self.room.0;
            self.requests
                .get_or_insert_with(|| RequestColumns::with_capacity(room, pools))
                .extend(rows, &pass.devices);
            pass.request_rows.drain(..n);
        }
        let n = whole(pass.bio_rows.len());
        if n > 0 {
            let rows = &pass.bio_rows[..n];
            self.tally.add_bios(rows);
            pass.stage_counts.count(rows);
            let room = self.room.1;
            self.bios
                .get_or_insert_with(|| BioColumns::with_capacity(room, pools))
                .extend(rows, &pass.devices, &pass.op_classes);
            pass.bio_rows.drain(..n);
        }
    }

    /// Every row handed over since the last take, as (requests, bios, the bios' Q2Q) batches.
    pub fn take(
        &mut self,
        pass: &mut Pass,
        (rwbs, comm): (&Dictionary, &Dictionary),
        pools: &Pools,
    ) -> Result<(RecordBatch, RecordBatch, RecordBatch), ArrowError> {
        self.absorb(pass, pools, true);
        let names = Names {
            devices: &pass.devices,
            rwbs,
            comm,
        };
        let requests = self
            .requests
            .take()
            .unwrap_or_else(|| RequestColumns::with_capacity(0, pools));
        let bios = self
            .bios
            .take()
            .unwrap_or_else(|| BioColumns::with_capacity(0, pools));
        self.room = (
            room_after(self.room.0, requests.len()),
            room_after(self.room.1, bios.len()),
        );
        let (bios, q2q) = bios.finish(&names, &pass.op_classes, pools)?;
        Ok((requests.finish(&names, pools)?, bios, q2q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::event::Action::*;
    use crate::pass::rows::{requests_batch, BioColumns};
    use crate::pass::testing::{ev, Trace};

    /// 150 writes of a page each, every one its own request: 150 rows of each table.
    fn written() -> Trace {
        let mut trace = Trace::plain();
        for k in 0..150 {
            let sector = 8 * k;
            trace.run(&[
                ev(Queue, sector, 8),
                ev(GetRequest, sector, 8),
                ev(Insert, sector, 8),
                ev(Dispatch, sector, 8),
                ev(Complete, sector, 8),
            ]);
        }
        trace.finish();
        trace
    }

    #[test]
    fn rows_made_columns_a_few_chunks_at_a_time_are_the_batch_of_all_of_them() {
        let mut trace = written();
        // the codes the trace's events carry: RWBS 0, comm 1
        let mut rwbs = Dictionary::default();
        rwbs.code("W");
        let comm = Dictionary::starting_with(&["?", "dd"]);
        let pools = Pools::default();
        let pass = &mut trace.pass;
        let (requests, bios) = (pass.request_rows.clone(), pass.bio_rows.clone());
        assert_eq!((requests.len(), bios.len()), (150, 150));
        let names = Names {
            devices: &pass.devices,
            rwbs: &rwbs,
            comm: &comm,
        };
        let expected_requests = requests_batch(&requests, &names, &pools).unwrap();
        let mut all = BioColumns::with_capacity(0, &pools);
        all.extend(&bios, &pass.devices, &pass.op_classes);
        let (expected_bios, expected_q2q) = all.finish(&names, &pass.op_classes, &pools).unwrap();

        let mut handover = Handover::default();
        handover.absorb(pass, &pools, false);
        // whole chunks only: the rest stays as rows until the take
        assert_eq!((pass.request_rows.len(), pass.bio_rows.len()), (22, 22));
        assert_eq!(handover.pending(pass), 300);
        let (got_requests, got_bios, got_q2q) =
            handover.take(pass, (&rwbs, &comm), &pools).unwrap();
        assert_eq!(got_requests, expected_requests);
        assert_eq!(got_bios, expected_bios);
        assert_eq!(got_q2q, expected_q2q);
        assert_eq!(handover.pending(pass), 0);
        let counted: i64 = handover.tally.bios().iter().map(|(_, c)| c.bios).sum();
        assert_eq!(counted, 150);
        // nothing handed over since: empty batches
        let (r, b, q) = handover.take(pass, (&rwbs, &comm), &pools).unwrap();
        assert_eq!((r.num_rows(), b.num_rows(), q.num_rows()), (0, 0, 0));
    }

    #[test]
    fn the_next_batch_has_room_for_a_little_more_than_the_most_rows_yet() {
        assert_eq!(room_after(FIRST_ROOM, 8), FIRST_ROOM);
        assert_eq!(room_after(FIRST_ROOM, 70_000), 1 << 17);
        assert_eq!(room_after(1 << 17, 1 << 16), 1 << 17);
    }
}
