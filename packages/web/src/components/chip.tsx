import type { CSSProperties, ReactNode } from 'react';

/** `teal.9` → its CSS variable; a bare name → the colour's filled shade. */
const colorVar = (color: string): string => {
  const [name, shade] = color.split('.');
  return shade ? `var(--mantine-color-${name}-${shade})` : `var(--mantine-color-${name}-filled)`;
};

/**
 * A badge as plain markup (a span styled by console.css's `.chip`, drawn like Mantine's Badge), for the cells of
 * the virtualised lists: rows mount on every scrolled frame there, and a Mantine Badge is a component tree per
 * cell. `filled`: white on the colour; `outline`: the colour on a transparent ground; `light`: the primary colour's
 * light ground, in the text's own case. Without `color`, the primary colour.
 */
export function Chip({
  color,
  variant = 'filled',
  small = false,
  testId,
  children,
}: {
  color?: string;
  variant?: 'filled' | 'outline' | 'light';
  small?: boolean;
  testId?: string;
  children: ReactNode;
}) {
  const className = `chip chip-${variant}${small ? ' chip-sm' : ''}`;
  const style = color ? ({ '--chip-color': colorVar(color) } as CSSProperties) : undefined;
  return (
    <span className={className} style={style} data-testid={testId}>
      {children}
    </span>
  );
}
