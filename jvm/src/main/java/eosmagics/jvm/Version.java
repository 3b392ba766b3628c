package eosmagics.jvm;

import org.apache.kafka.common.utils.internals.AppInfoParser;

/** Prints the kafka-clients version on the class path: the build's smoke check (scripts/build-jvm.sh). */
public final class Version {
    private Version() {}

    public static void main(String[] args) {
        System.out.println(AppInfoParser.getVersion());
    }
}
