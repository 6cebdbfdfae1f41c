import {
  Anchor,
  Button,
  Card,
  NavLink,
  type AnchorProps,
  type ButtonProps,
  type CardProps,
  type NavLinkProps,
} from '@mantine/core';
import { createLink } from '@tanstack/react-router';
import type { ComponentPropsWithRef } from 'react';

// Mantine's components are polymorphic; fixed to <a> they become typed router links (paths, params, search).
type AnchorElementProps = Omit<ComponentPropsWithRef<'a'>, 'color' | 'style'>;

function AnchorBase(props: AnchorProps & AnchorElementProps) {
  return <Anchor component="a" {...props} />;
}
function ButtonBase(props: ButtonProps & AnchorElementProps) {
  return <Button component="a" {...props} />;
}
function CardBase(props: CardProps & AnchorElementProps) {
  return <Card component="a" {...props} />;
}
function NavLinkBase(props: NavLinkProps & Omit<AnchorElementProps, 'children'>) {
  return <NavLink component="a" {...props} />;
}

export const AnchorLink = createLink(AnchorBase);
export const ButtonLink = createLink(ButtonBase);
export const CardLink = createLink(CardBase);
export const NavLinkLink = createLink(NavLinkBase);
