/**
 * The regions an encoding was built with, one per zone of its instances. A zone's region comes
 * from the peers' configuration, which membership may learn after an encoding was built: it is
 * no record and no lease, so a stable view (stable-views.ts) does not follow it. An encoding
 * kept with a stable view that shows regions (Prometheus labels) notes
 * them here while it is built, and is rebuilt when `holds` says one moved. Pure: no I/O.
 */
export class ZoneRegions {
  private readonly regions = new Map<string, string | null>();

  /** The region of `zone` as `regionOfZone` says, noted (each zone is asked once). */
  regionOf(zone: string, regionOfZone: (zone: string) => string | undefined): string | null {
    let region = this.regions.get(zone);
    if (region === undefined) this.regions.set(zone, (region = regionOfZone(zone) ?? null));
    return region;
  }

  /** Whether every zone noted still has the region it was built with. */
  holds(regionOfZone: (zone: string) => string | undefined): boolean {
    for (const [zone, region] of this.regions) if ((regionOfZone(zone) ?? null) !== region) return false;
    return true;
  }
}
