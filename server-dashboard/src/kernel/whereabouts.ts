/**
 * Where the user is, as one feature asks it and another answers it: calls hold a call at an avoided
 * place (the seed, "No calls at places") and location knows the latest fix. The interface lives here so
 * neither feature imports the other; app.ts hands location's answer to the calls dispatcher.
 */
export interface Whereabouts {
  /** The saved place of the latest fix that still counts; null when it is at none (or a private one). */
  placeId: string | null;
  /** False with no recent fix, or with location sharing paused or off. */
  known: boolean;
}

/** The port calls take: the whereabouts of the profile whose Hermes home is `home`. */
export type WhereIs = (home: string) => Whereabouts;
