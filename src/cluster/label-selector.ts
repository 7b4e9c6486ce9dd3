// Label selectors (metav1.LabelSelector) as apimachinery evaluates them: matchLabels and matchExpressions AND'd.
import type { LabelSelector } from './types.ts';

export class SelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SelectorError';
  }
}

/**
 * Whether `labels` satisfy `selector`. An empty selector matches everything; callers decide what a missing
 * selector means (upstream's LabelSelectorAsSelector(nil) matches nothing). Throws SelectorError on an invalid one.
 */
export function matchLabelSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const own = labels ?? {};
  const matchLabels = selector.matchLabels;
  if (matchLabels) {
    // for…in, not Object.entries: no array per call (capacity selectors are matched for every node).
    for (const key in matchLabels) {
      if (!Object.hasOwn(matchLabels, key)) continue;
      if (!Object.hasOwn(own, key) || own[key] !== matchLabels[key]) return false;
    }
  }
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(own, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        if (values.length === 0)
          throw new SelectorError(`values: Invalid value: for 'in', 'notin' operators, values set can't be empty`);
        if (!has || !values.includes(own[req.key])) return false;
        break;
      case 'NotIn':
        if (values.length === 0)
          throw new SelectorError(`values: Invalid value: for 'in', 'notin' operators, values set can't be empty`);
        if (has && values.includes(own[req.key])) return false;
        break;
      case 'Exists':
        if (values.length > 0)
          throw new SelectorError(`values: Invalid value: values set must be empty for exists and does not exist`);
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (values.length > 0)
          throw new SelectorError(`values: Invalid value: values set must be empty for exists and does not exist`);
        if (has) return false;
        break;
      default:
        throw new SelectorError(`"${req.operator}" is not a valid label selector operator`);
    }
  }
  return true;
}

/** Like matchLabelSelector, but an invalid selector simply does not match. */
export function selectorMatchesSafely(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  try {
    return matchLabelSelector(selector, labels);
  } catch {
    return false;
  }
}
