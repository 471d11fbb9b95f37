//! Not built again: the step's one memo. At incident scale nearly every subject of a step —
//! a worker and its finding, a debug session and its node — is last step's, and building,
//! formatting and planning thousands of them again every tick is most of a tick.
//!
//! A [`Memo`] keeps each output with exactly what it was made from (its inputs, typed) and
//! gives it back while the inputs are equal. Processes and other shared parts are compared by
//! allocation ([`ByAlloc`]): a process that changed in any way is a new `Arc`, and the memo
//! holds the old one, so its address is never reused under it. What a step did not ask for is
//! forgotten at its end ([`Memo::turn`]).

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// A shared value compared by allocation: the same `Arc` is the same input, an equal copy is
/// not (it may be equal now and was built from something else).
#[derive(Debug)]
pub struct ByAlloc<T>(pub Arc<T>);

impl<T> Clone for ByAlloc<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T> PartialEq for ByAlloc<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> ByAlloc<T> {
    /// The allocation of `a`.
    pub fn of(a: &Arc<T>) -> Self {
        Self(Arc::clone(a))
    }

    /// The allocations of `v`, in order.
    pub fn all<'a>(v: impl IntoIterator<Item = &'a Arc<T>>) -> Vec<Self>
    where
        T: 'a,
    {
        v.into_iter().map(Self::of).collect()
    }
}

/// Outputs by key, each with the inputs it was built from and the last step that asked for it.
#[derive(Debug)]
pub struct Memo<K, I, V> {
    built: FxHashMap<K, Built<I, V>>,
    step: u64,
}

#[derive(Debug)]
struct Built<I, V> {
    inputs: I,
    value: V,
    step: u64,
}

impl<K, I, V> Default for Memo<K, I, V> {
    fn default() -> Self {
        Self {
            built: FxHashMap::default(),
            step: 0,
        }
    }
}

impl<K: Hash + Eq, I: PartialEq, V: Clone> Memo<K, I, V> {
    /// The value last built under `key` from inputs equal to `inputs`, if `holds` says it is
    /// still good (a check the inputs cannot make: a kill plan against this step's table);
    /// else `build`'s, remembered with `inputs`. The inputs may be given borrowed (`J`): they
    /// are made owned only when something is built.
    pub fn get_or_build<Q, J>(
        &mut self,
        key: &Q,
        inputs: J,
        holds: impl FnOnce(&V) -> bool,
        build: impl FnOnce() -> V,
    ) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        I: PartialEq<J>,
        J: Into<I>,
    {
        self.get_or_build_as(key, inputs, holds, build, |_, _| false)
    }

    /// As [`Memo::get_or_build`], but a value built again equal to the last one is the last
    /// one: a value made anew from new inputs (a process's first CPU figure, which the session
    /// does not show) keeps its allocation, so what shares it downstream (`share`, the
    /// redaction, the window's diff) still finds the very same one, every step after.
    pub fn get_or_build_same<Q, J>(&mut self, key: &Q, inputs: J, build: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        I: PartialEq<J>,
        J: Into<I>,
        V: PartialEq,
    {
        self.get_or_build_as(key, inputs, |_| true, build, |old, new| old == new)
    }

    fn get_or_build_as<Q, J>(
        &mut self,
        key: &Q,
        inputs: J,
        holds: impl FnOnce(&V) -> bool,
        build: impl FnOnce() -> V,
        same: impl FnOnce(&V, &V) -> bool,
    ) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        I: PartialEq<J>,
        J: Into<I>,
    {
        let step = self.step;
        let Some(b) = self.built.get_mut(key) else {
            let built = build();
            let b = Built {
                inputs: inputs.into(),
                value: built.clone(),
                step,
            };
            self.built.insert(key.to_owned(), b);
            return built;
        };
        b.step = step;
        if b.inputs == inputs && holds(&b.value) {
            return b.value.clone();
        }
        let built = build();
        b.inputs = inputs.into();
        if !same(&b.value, &built) {
            b.value = built;
        }
        b.value.clone()
    }

    /// Forgets what this step did not ask for; the next step begins.
    pub fn turn(&mut self) {
        let step = self.step;
        self.built.retain(|_, b| b.step == step);
        self.step += 1;
    }

    /// How many outputs are held.
    pub fn len(&self) -> usize {
        self.built.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.built.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type M = Memo<String, (u32, ByAlloc<String>), Arc<String>>;

    fn get(m: &mut M, key: &str, n: u32, a: &Arc<String>, builds: &mut u32) -> Arc<String> {
        m.get_or_build(
            key,
            (n, ByAlloc::of(a)),
            |_| true,
            || {
                *builds += 1;
                Arc::new(format!("{key}:{n}:{a}"))
            },
        )
    }

    #[test]
    fn the_same_inputs_give_the_same_value_and_any_change_builds_again() {
        let (mut m, mut builds) = (M::default(), 0);
        let a = Arc::new("a".to_owned());
        let first = get(&mut m, "k", 1, &a, &mut builds);
        m.turn();
        assert!(Arc::ptr_eq(&first, &get(&mut m, "k", 1, &a, &mut builds)));
        assert_eq!(builds, 1);
        // An equal copy is another allocation: built again.
        let copy = Arc::new("a".to_owned());
        get(&mut m, "k", 1, &copy, &mut builds);
        assert_eq!(builds, 2);
        // A value input changed.
        get(&mut m, "k", 2, &copy, &mut builds);
        assert_eq!(builds, 3);
    }

    #[test]
    fn what_a_step_did_not_ask_for_is_forgotten() {
        let (mut m, mut builds) = (M::default(), 0);
        let a = Arc::new("a".to_owned());
        get(&mut m, "k", 1, &a, &mut builds);
        get(&mut m, "j", 1, &a, &mut builds);
        m.turn();
        get(&mut m, "k", 1, &a, &mut builds);
        m.turn();
        assert_eq!(m.len(), 1);
        get(&mut m, "j", 1, &a, &mut builds);
        assert_eq!(builds, 3);
    }

    #[test]
    fn a_value_built_again_equal_to_the_last_is_the_last_allocation() {
        let mut m: Memo<u32, u32, Arc<String>> = Memo::default();
        let first = m.get_or_build_same(&1, 1, || Arc::new("a".into()));
        let same = m.get_or_build_same(&1, 2, || Arc::new("a".into()));
        assert!(
            Arc::ptr_eq(&first, &same),
            "an equal value keeps its allocation"
        );
        let mut builds = 0;
        let again = m.get_or_build_same(&1, 2, || {
            builds += 1;
            Arc::new("b".into())
        });
        assert!(
            Arc::ptr_eq(&first, &again) && builds == 0,
            "the new inputs are kept"
        );
        let changed = m.get_or_build_same(&1, 3, || Arc::new("b".into()));
        assert_eq!(*changed, "b");
        // The plain way keeps no equal value: a new allocation each time the inputs change.
        let mut plain: Memo<u32, u32, Arc<String>> = Memo::default();
        let a = plain.get_or_build(&1, 1, |_| true, || Arc::new("a".into()));
        let b = plain.get_or_build(&1, 2, |_| true, || Arc::new("a".into()));
        assert!(!Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn a_value_that_no_longer_holds_is_built_again() {
        let mut m: Memo<u32, (), u32> = Memo::default();
        assert_eq!(m.get_or_build(&1, (), |_| true, || 10), 10);
        assert_eq!(m.get_or_build(&1, (), |_| true, || 11), 10);
        assert_eq!(m.get_or_build(&1, (), |_| false, || 12), 12);
    }
}
