// The benchmark's data: the item shape (DESIGN.md §8) and the deterministic random generator that
// picks ids, so every engine reads and writes the same items in the same order. Shared by the
// page, every engine worker and the Node runner: dependency-free, valid in window, worker and Node.

/** Logical id of base item i (0 <= i < N). Adapters map it onto their own key scheme. */
export const itemId = (i) => `item-${i}`;

/**
 * The benchmark item (DESIGN.md section 8): {title: "Item i", count: i, tags: {"tag i", "category i%5"}}.
 * `tags` is a set of strings; it crosses the protocol as an array (order not significant).
 */
export function makeItem(i) {
  return { id: itemId(i), title: `Item ${i}`, count: i, tags: [`tag ${i}`, `category ${i % 5}`] };
}

/** The three fields written by the "update item" row, derived from the item index. */
export function updatedFields(i, version = 1) {
  return { title: `Item ${i} v${version}`, count: i + 1, tags: [`tag ${i}`, `category ${(i + version) % 5}`] };
}

/** Small deterministic PRNG (mulberry32) so every engine reads/updates the same ids in the same order. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n) };
}
