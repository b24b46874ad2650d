//! Things in flight (requests being built, bios, pieces, plug sessions, tasks) live in slabs:
//! a vector whose free slots are reused, so memory follows what is in flight, not the length
//! of the trace, and a thing is named by its slot (the links between them are slot numbers).

/// A slot number in a slab.
pub type Id = usize;

pub struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<Id>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Store `item` in a free slot (the most recently freed one) and name it.
    pub fn insert(&mut self, item: T) -> Id {
        match self.free.pop() {
            Some(id) => {
                self.slots[id] = Some(item);
                id
            }
            None => {
                self.slots.push(Some(item));
                self.slots.len() - 1
            }
        }
    }

    /// Free the item's slot for the next insert, dropping the item where it lies (it is not
    /// moved out first).
    pub fn discard(&mut self, id: Id) {
        assert!(self.contains(id), "discarding a free slab slot");
        self.slots[id] = None;
        self.free.push(id);
    }

    /// The most items it ever held at once: a slot is added only when none is free.
    pub fn most_held(&self) -> usize {
        self.slots.len()
    }

    pub fn contains(&self, id: Id) -> bool {
        matches!(self.slots.get(id), Some(Some(_)))
    }

    /// The ids of every item, in slot order.
    pub fn ids(&self) -> Vec<Id> {
        (0..self.slots.len())
            .filter(|&id| self.contains(id))
            .collect()
    }

    /// Every item, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (Id, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| slot.as_ref().map(|item| (id, item)))
    }
}

impl<T> std::ops::Index<Id> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: Id) -> &T {
        self.slots[id].as_ref().expect("a free slab slot")
    }
}

impl<T> std::ops::IndexMut<Id> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, id: Id) -> &mut T {
        self.slots[id].as_mut().expect("a free slab slot")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_slot_is_reused_and_the_rest_keep_their_ids() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        let b = slab.insert("b");
        let c = slab.insert("c");
        slab.discard(b);
        assert!(!slab.contains(b));
        assert_eq!(slab.ids().len(), 2);
        assert_eq!(slab.insert("d"), b);
        assert_eq!((slab[a], slab[b], slab[c]), ("a", "d", "c"));
        assert_eq!(slab.ids(), vec![a, b, c]);
        assert_eq!(slab.most_held(), 3);
    }
}
