//! Spreading CPU work over the machine's cores, for references of GPU-sized inputs.

/// Runs `f` on every item, spread over the machine's cores (for GPU-sized inputs and CPU
/// references).
pub fn par_each<I: Send, F: Fn(I) + Sync>(items: Vec<I>, f: F) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(1);
    let per = items.len().div_ceil(threads).max(1);
    let mut items = items;
    std::thread::scope(|scope| {
        while !items.is_empty() {
            let rest = items.split_off(per.min(items.len()));
            let mine = std::mem::replace(&mut items, rest);
            let f = &f;
            scope.spawn(move || mine.into_iter().for_each(f));
        }
    });
}
