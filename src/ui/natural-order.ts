/**
 * The order people expect for instance ids and service names: numbers inside them compare as
 * numbers, so `10.7.0.2` comes before `10.7.0.19` and `svc-9` before `svc-10`. Shared by the
 * dashboard and the command line so both list instances the same way. The API keeps its own
 * plain order (docs/api.md); this is for display only.
 */
const collator = new Intl.Collator('en', { numeric: true });

/**
 * Natural order (Intl.Collator, numeric), then plain code-point order between names it holds
 * equal (`01` and `1`, or names differing only in ways it ignores) so the order is total and
 * the same on every run.
 */
export function naturalCompare(a: string, b: string): number {
  return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
}
