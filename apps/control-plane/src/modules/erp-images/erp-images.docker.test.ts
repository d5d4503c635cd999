// The image settings: the database image's PostgreSQL major read from its tag or declared,
// and the ERP versions whose image is declared an Enterprise build.
import { describe, expect, it } from "vitest";
import { createErpImages, postgresMajorOfImage } from "./erp-images.ts";

function memoryRepo() {
  let value: unknown;
  return { load: async () => value, save: async (v: unknown) => void (value = v) };
}

describe("postgresMajorOfImage", () => {
  it("reads the major a tag starts with", () => {
    expect(postgresMajorOfImage("postgres:16")).toBe(16);
    expect(postgresMajorOfImage("postgres:16.4-alpine")).toBe(16);
    expect(postgresMajorOfImage("registry.example.com:5000/pg/postgres:17-bookworm@sha256:abc")).toBe(17);
    expect(postgresMajorOfImage("berth-test/postgres:15")).toBe(15);
  });
  it("is null when the tag names no major", () => {
    expect(postgresMajorOfImage("postgres")).toBeNull();
    expect(postgresMajorOfImage("postgres:latest")).toBeNull();
    expect(postgresMajorOfImage("registry.example.com:5000/postgres")).toBeNull();
    expect(postgresMajorOfImage("postgres@sha256:abc")).toBeNull();
  });
});

describe("createErpImages", () => {
  it("answers the database image's major (tag, else declared) and whether the ERP image is Enterprise", async () => {
    const images = createErpImages(memoryRepo());
    expect(await images.imageFor("17.0")).toMatchObject({ image: "odoo:17.0", db: "postgres:16", db_major: 16, enterprise: false });
    await images.set({ erp: { "17.0": "registry.example.com/odoo-ee:17.0" }, enterprise: ["17.0"], db: "registry.example.com/pg:stable", db_major: 17 });
    expect(await images.imageFor("17.0.1.3")).toMatchObject({ image: "registry.example.com/odoo-ee:17.0", db_major: 17, enterprise: true });
    expect(await images.imageFor("18.0")).toMatchObject({ enterprise: false });
    // A new database image without a major forgets the one declared for the old image.
    await images.set({ db: "postgres:18" });
    expect(await images.imageFor("17.0")).toMatchObject({ db: "postgres:18", db_major: 18, enterprise: true });
  });
  it("refuses an unknown ERP version among the Enterprise ones and a major that is none", async () => {
    const images = createErpImages(memoryRepo());
    await expect(images.set({ enterprise: ["12.0"] })).rejects.toMatchObject({ code: "unsupported_erp_version" });
    await expect(images.set({ db_major: 1.5 })).rejects.toMatchObject({ code: "validation_error" });
  });
});
