import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import type http from 'node:http';
import { LoopbackDouble } from './loopback-server.js';

/**
 * Apple Maps Server API on loopback, as documented
 * (https://developer.apple.com/documentation/applemapsserverapi): `GET /v1/token` exchanges the
 * relay's ES256 JWT (checked against the Maps key's public key) for an access token, and /v1/search,
 * /v1/geocode, /v1/reverseGeocode, /v1/directions and /v1/etas answer only that token, with the
 * documented JSON shapes, from a small gazetteer. Every call is reported (`calls`, `tokenExchanges`).
 */

export interface GazetteerPlace {
  name: string;
  lat: number;
  lon: number;
  addressLines: string[];
  category?: string;
  locality: string;
  subLocality: string;
}

/** A few places in central Paris. */
export const PARIS: readonly GazetteerPlace[] = [
  {
    name: 'Musée du Louvre',
    lat: 48.8606,
    lon: 2.3376,
    addressLines: ['Rue de Rivoli', '75001 Paris', 'France'],
    category: 'Museum',
    locality: 'Paris',
    subLocality: '1st Arrondissement',
  },
  {
    name: 'Café de Flore',
    lat: 48.8541,
    lon: 2.3326,
    addressLines: ['172 Boulevard Saint-Germain', '75006 Paris', 'France'],
    category: 'Cafe',
    locality: 'Paris',
    subLocality: '6th Arrondissement',
  },
  {
    name: 'Café Kitsuné',
    lat: 48.8637,
    lon: 2.337,
    addressLines: ['51 Galerie de Montpensier', '75001 Paris', 'France'],
    category: 'Cafe',
    locality: 'Paris',
    subLocality: '1st Arrondissement',
  },
  {
    name: '10 Rue de Rivoli',
    lat: 48.8556,
    lon: 2.3601,
    addressLines: ['10 Rue de Rivoli', '75004 Paris', 'France'],
    locality: 'Paris',
    subLocality: 'Le Marais',
  },
  {
    name: 'Gare de Lyon',
    lat: 48.8443,
    lon: 2.3744,
    addressLines: ['Place Louis-Armand', '75012 Paris', 'France'],
    category: 'PublicTransport',
    locality: 'Paris',
    subLocality: '12th Arrondissement',
  },
];

export interface MapsCall {
  path: string;
  params: URLSearchParams;
  /** The bearer the call carried. */
  token: string | null;
  status: number;
}

/** Metres between two points (haversine). */
function metres(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const rad = (d: number) => (d * Math.PI) / 180;
  const h =
    Math.sin(rad(b.lat - a.lat) / 2) ** 2 +
    Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(rad(b.lon - a.lon) / 2) ** 2;
  return 2 * 6_371_000 * Math.asin(Math.sqrt(h));
}

const SPEED_M_PER_S: Record<string, number> = { Automobile: 8, Walking: 1.4, Cycling: 4.5, Transit: 6 };

function place(p: GazetteerPlace) {
  return {
    id: `I${Buffer.from(p.name).toString('hex').slice(0, 14).toUpperCase()}`,
    name: p.name,
    coordinate: { latitude: p.lat, longitude: p.lon },
    displayMapRegion: {
      southLatitude: p.lat - 0.004,
      westLongitude: p.lon - 0.006,
      northLatitude: p.lat + 0.004,
      eastLongitude: p.lon + 0.006,
    },
    formattedAddressLines: p.addressLines,
    structuredAddress: {
      administrativeArea: 'Île-de-France',
      locality: p.locality,
      subLocality: p.subLocality,
      fullThoroughfare: p.addressLines[0],
    },
    country: 'France',
    countryCode: 'FR',
    ...(p.category ? { poiCategory: p.category } : {}),
  };
}

function errorBody(message: string) {
  return { error: { message, details: [] } };
}

export class AppleMapsStandIn extends LoopbackDouble {
  readonly calls: MapsCall[] = [];
  /** Access tokens handed out by /v1/token, in order. */
  readonly issued: string[] = [];
  tokenExchanges = 0;
  /** How long each handed-out token lives, in seconds (Apple's are about 30 minutes). */
  expiresInSeconds = 1800;
  private readonly publicKey: KeyObject;

  constructor(
    private readonly key: { publicKeyPem: string; keyId: string; teamId: string },
    private readonly places: readonly GazetteerPlace[] = PARIS,
  ) {
    super();
    this.publicKey = createPublicKey(key.publicKeyPem);
  }

  /** Apple stops accepting a token it handed out (a revoked key, say). */
  revoke(token: string): void {
    const index = this.issued.indexOf(token);
    if (index >= 0) this.issued.splice(index, 1);
  }

  /** The calls to one endpoint. */
  callsTo(path: string): MapsCall[] {
    return this.calls.filter((call) => call.path === path);
  }

  protected handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : null;
    const send = (status: number, body: unknown) => {
      this.calls.push({ path: url.pathname, params: url.searchParams, token, status });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET') return Promise.resolve(send(405, errorBody('Method not allowed')));
    if (url.pathname === '/v1/token') {
      if (!token || !this.validJwt(token)) return Promise.resolve(send(401, errorBody('Not Authorized')));
      this.tokenExchanges++;
      const accessToken = `maps-access-${randomBytes(12).toString('hex')}`;
      this.issued.push(accessToken);
      return Promise.resolve(send(200, { accessToken, expiresInSeconds: this.expiresInSeconds }));
    }
    if (!token || !this.issued.includes(token)) return Promise.resolve(send(401, errorBody('Not Authorized')));
    try {
      const answer = this.answer(url.pathname, url.searchParams);
      return Promise.resolve(send(answer.status, answer.body));
    } catch {
      return Promise.resolve(send(400, errorBody('Invalid parameter')));
    }
  }

  /** The relay's JWT: `{alg: ES256, kid, typ: JWT}.{iss, iat, exp}`, signed by the Maps key (P-1363). */
  private validJwt(jwt: string): boolean {
    const [header, claims, signature, extra] = jwt.split('.');
    if (!header || !claims || !signature || extra !== undefined) return false;
    const signed = verify(
      'sha256',
      Buffer.from(`${header}.${claims}`),
      { key: this.publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature, 'base64url'),
    );
    if (!signed) return false;
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>;
    const body = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    const nowS = Math.floor(Date.now() / 1000);
    return (
      head.alg === 'ES256' &&
      head.kid === this.key.keyId &&
      body.iss === this.key.teamId &&
      typeof body.exp === 'number' &&
      body.exp > nowS
    );
  }

  private point(text: string): GazetteerPlace | null {
    const coordinate = /^(-?[\d.]+),(-?[\d.]+)$/.exec(text);
    if (coordinate) {
      const at = { lat: Number(coordinate[1]), lon: Number(coordinate[2]) };
      return { name: text, ...at, addressLines: [], locality: 'Paris', subLocality: '' };
    }
    return this.geocode(text)[0] ?? null;
  }

  private geocode(q: string): GazetteerPlace[] {
    const wanted = q.toLowerCase();
    return this.places.filter(
      (p) => p.name.toLowerCase().includes(wanted) || p.addressLines.join(', ').toLowerCase().includes(wanted),
    );
  }

  private nearest(at: { lat: number; lon: number }): GazetteerPlace | undefined {
    return [...this.places].sort((a, b) => metres(at, a) - metres(at, b))[0];
  }

  private answer(path: string, params: URLSearchParams): { status: number; body: unknown } {
    switch (path) {
      case '/v1/geocode': {
        const q = params.get('q');
        if (!q) return { status: 400, body: errorBody('Missing q') };
        return { status: 200, body: { results: this.geocode(q).map(place) } };
      }
      case '/v1/reverseGeocode': {
        const loc = /^(-?[\d.]+),(-?[\d.]+)$/.exec(params.get('loc') ?? '');
        if (!loc) return { status: 400, body: errorBody('Invalid loc') };
        const found = this.nearest({ lat: Number(loc[1]), lon: Number(loc[2]) });
        return { status: 200, body: { results: found ? [place(found)] : [] } };
      }
      case '/v1/search': {
        const q = (params.get('q') ?? '').toLowerCase();
        if (!q) return { status: 400, body: errorBody('Missing q') };
        const categories = params.get('includePoiCategories')?.split(',') ?? [];
        const at = /^(-?[\d.]+),(-?[\d.]+)$/.exec(params.get('searchLocation') ?? '');
        let found = this.places.filter((p) =>
          categories.length > 0
            ? p.category !== undefined && categories.includes(p.category)
            : p.name.toLowerCase().includes(q) || (p.category ?? '').toLowerCase().includes(q),
        );
        if (at) {
          const center = { lat: Number(at[1]), lon: Number(at[2]) };
          found = [...found].sort((a, b) => metres(center, a) - metres(center, b));
        }
        const results = found.map(place);
        const first = results[0];
        return {
          status: 200,
          body: { ...(first ? { displayMapRegion: first.displayMapRegion } : {}), results },
        };
      }
      case '/v1/directions': {
        const from = this.point(params.get('origin') ?? '');
        const to = this.point(params.get('destination') ?? '');
        if (!from || !to) return { status: 400, body: errorBody('Could not resolve origin or destination') };
        const transport = params.get('transportType') ?? 'Automobile';
        const speed = SPEED_M_PER_S[transport];
        if (!speed) return { status: 400, body: errorBody('Invalid transportType') };
        const base = Math.round(metres(from, to) * 1.3);
        const alternates = params.get('requestsAlternateRoutes') === 'true' ? 2 : 1;
        const avoidTolls = params.get('avoid') === 'Tolls';
        const routes = [];
        const steps = [];
        for (let r = 0; r < alternates; r++) {
          const distance = base + r * 400;
          routes.push({
            name: r === 0 ? 'Quai du Louvre' : 'Rue de Rivoli',
            distanceMeters: distance,
            durationSeconds: Math.round(distance / speed),
            transportType: transport.toUpperCase(),
            stepIndexes: [steps.length, steps.length + 1, steps.length + 2],
            hasTolls: transport === 'Automobile' && r === 0 && !avoidTolls,
          });
          steps.push(
            { stepPathIndex: 0, distanceMeters: 0, durationSeconds: 0, instructions: '' },
            {
              stepPathIndex: 1,
              distanceMeters: Math.round(distance / 2),
              durationSeconds: Math.round(distance / 2 / speed),
              instructions: `Head east on ${r === 0 ? 'Quai du Louvre' : 'Rue de Rivoli'}`,
            },
            {
              stepPathIndex: 2,
              distanceMeters: distance - Math.round(distance / 2),
              durationSeconds: Math.round((distance - Math.round(distance / 2)) / speed),
              instructions: 'Arrive at the destination',
            },
          );
        }
        return {
          status: 200,
          body: {
            origin: place(from),
            destination: place(to),
            routes,
            steps,
            stepPaths: [[], [], []],
          },
        };
      }
      case '/v1/etas': {
        const origin = this.point(params.get('origin') ?? '');
        const destinations = (params.get('destinations') ?? '').split('|').filter(Boolean);
        if (!origin || destinations.length === 0 || destinations.length > 10)
          return { status: 400, body: errorBody('Invalid origin or destinations') };
        const transport = params.get('transportType') ?? 'Automobile';
        const speed = SPEED_M_PER_S[transport] ?? 8;
        // Answered in reverse order: a client must match by coordinate, not by position.
        const etas = destinations
          .map((text) => {
            const [lat, lon] = text.split(',').map(Number);
            const destination = { latitude: lat ?? 0, longitude: lon ?? 0 };
            const distance = Math.round(metres(origin, { lat: lat ?? 0, lon: lon ?? 0 }) * 1.3);
            return {
              destination,
              transportType: transport.toUpperCase(),
              distanceMeters: distance,
              expectedTravelTimeSeconds: Math.round(distance / speed),
              staticTravelTimeSeconds: Math.round((distance / speed) * 0.9),
            };
          })
          .reverse();
        return { status: 200, body: { etas } };
      }
      default:
        return { status: 404, body: errorBody('Not found') };
    }
  }
}
